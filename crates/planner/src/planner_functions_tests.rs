use super::PLANNER_FUNCTIONS;

#[test]
fn names_are_sorted_unique_and_not_registered_udfs() {
    let firsts: Vec<&str> = PLANNER_FUNCTIONS.iter().map(|f| f.names[0]).collect();
    let mut sorted = firsts.clone();
    sorted.sort_unstable();
    assert_eq!(firsts, sorted, "PLANNER_FUNCTIONS is not sorted");
    let mut all: Vec<&str> = super::names().collect();
    let count = all.len();
    all.sort_unstable();
    all.dedup();
    assert_eq!(all.len(), count, "a name is listed twice");
}
