//! The cross-replica relay against real brokers, each started on a free
//! loopback port per test: Redis Pub/Sub and a Redis Cluster (`redis`),
//! core NATS (`nats`), faults on schedules a test controls through a TCP
//! proxy (`faults`), a bounded chaos run over both brokers (`chaos`),
//! audiences and revocation across replicas over both (`audiences`), and
//! replicas started, stopped gracefully and killed (`deploys`).

#![cfg(any(feature = "redis", feature = "nats"))]

#[path = "../support/broker.rs"]
mod broker;
#[path = "../support/proxy.rs"]
mod proxy;
#[path = "../support/scoped.rs"]
mod scoped;
#[path = "../support/waiting.rs"]
mod waiting;

mod replicas;

mod audiences;
mod chaos;
#[cfg(feature = "redis")]
mod deploys;
#[cfg(feature = "redis")]
mod faults;
#[cfg(feature = "nats")]
mod nats;
#[cfg(feature = "redis")]
mod redis;
