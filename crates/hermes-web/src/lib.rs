//! The agent reaches the world.

pub mod api;
pub mod extract;
pub mod net;
pub mod search;
