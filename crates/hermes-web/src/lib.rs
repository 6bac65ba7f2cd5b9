//! The agent reaches the world.

pub mod net;
