//! The agent reaches the world.

pub mod api;
pub mod net;
pub mod search;
