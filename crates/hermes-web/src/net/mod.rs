//! Outbound network access on the model's behalf: address classification ([`ip`]), the URL and
//! website rules ([`policy`]), name resolution ([`resolver`]) and the fetcher that applies them
//! to every hop of every request ([`fetch`]).

pub mod fetch;
pub mod ip;
pub mod policy;
pub mod resolver;

pub use fetch::{FetchError, FetchLimits, Fetched, Fetcher, parse_url};
pub use policy::{Refusal, RefusalReason, UrlPolicy};
pub use resolver::{Resolver, StaticResolver, SystemResolver};
