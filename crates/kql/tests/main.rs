//! Integration tests of the KQL front end: one binary, one module per concern.

mod support;

mod corpus;
mod errors;
mod expressions;
mod operators;
mod robustness;
mod roundtrip;
mod sources_and_joins;
mod statements;
