//! The end-to-end tests, one test binary: every module is what used to be
//! a binary of its own (`cargo test --release --workspace --test e2e --
//! browser::` runs one). One binary is linked once instead of 24 times, and
//! its tests share the harness's threads, so a module whose last test runs
//! long no longer holds the whole suite up (issue 41: the suite's build and
//! its waits were most of `./scripts/test`'s time).
//!
//! The page's tests are the module `page`: `./scripts/test` runs them
//! (`-- page::`) in a process of their own, two at a time, beside the rest
//! (`-- --skip page::`). Each drives a headless Chromium, which wants a core
//! of the two this machine has while it lays a page out; the other tests
//! mostly wait, on real servers and lessons played in real time.
//!
//! Three binaries stay apart: `security`, `security_props` and
//! `monitor_import` measure this process's peak memory, which other tests
//! in the same process would add to.

// The simulator against redis-server.
mod differential;
mod proptest_diff;
mod sim_server;

// The backend, its WebSocket and the page it serves.
mod async_lane;
mod backend_api;
mod backend_real;
mod class;
mod class_redis;
mod scripts_owner;
mod web;

// Real servers: Redis, Sentinel, etcd, ZooKeeper.
mod explore_real;
mod four_services_real;
mod lessons_real;
mod lockservice_real;
mod real;
mod real_faults;
mod zookeeper_real;

// Real lock libraries under a nemesis.
mod check_libraries;

// The page in headless Chromium.
mod page {
    mod browser;
    mod browser_class;
    mod browser_explore;
    mod browser_explore_steps;
    mod browser_interview;
    mod browser_notes;
    mod browser_open;
}
