//! Pattern mining over discrete attributes: the aggregates behind `evaluate basket`,
//! `evaluate autocluster` and `evaluate diffpatterns`. Each row gives its dimension values (a
//! dynamic array, one element per dimension column), a weight and, for `diffpatterns`, the
//! set it belongs to; the distinct rows and their weights are gathered ([`rows`]) and mined
//! when the aggregate finishes. A pattern assigns values to some of the dimensions and leaves
//! the others free; the result is a dynamic array of patterns, `values` holding null for the
//! free dimensions.

pub mod autocluster;
pub mod basket;
pub mod diffpatterns;
mod rows;
