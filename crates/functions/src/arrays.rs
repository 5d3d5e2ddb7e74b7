//! Dynamic array functions: `pack_array`, `array_*`, `set_*`, `zip`, `strcat_array`, `split`.
//! Arguments of kind Dynamic arrive as JSON text; results are JSON text (null when Kusto
//! gives null, e.g. for an argument that is not an array).

use datafusion::error::Result;
use serde_json::Value;

use crate::json::{self, compare, distinct, element_text, out, out_opt, parse, parse_array, same};
use crate::rowfn::{Out, Val, arg, str_arg};

/// An index as Kusto reads it: negative counts from the end.
fn from_end(index: i64, len: usize) -> i64 {
    if index < 0 { index + len as i64 } else { index }
}

pub fn pack_array(args: &[Val]) -> Result<Out> {
    Ok(out(Value::Array(
        args.iter().map(|v| parse(*v).unwrap_or(Value::Null)).collect(),
    )))
}

/// `repeat(value, count)`: an array of `count` copies of `value`; empty for 0, null for a
/// negative count.
pub fn repeat(args: &[Val]) -> Result<Out> {
    let Some(count) = arg(args, 1).long() else {
        return Ok(Out::Null);
    };
    let Ok(count) = usize::try_from(count) else {
        return Ok(Out::Null);
    };
    if count > crate::series::RANGE_LIMIT {
        return Err(datafusion::error::DataFusionError::Execution(format!(
            "repeat() makes at most {} elements, asked for {count}",
            crate::series::RANGE_LIMIT
        )));
    }
    let value = parse(arg(args, 0)).unwrap_or(Value::Null);
    // Each copy is written out whole: a long value repeated is asked for first.
    let each = match arg(args, 0) {
        Val::Str(text) => text.len(),
        _ => 8,
    };
    let bytes = each.saturating_add(1).saturating_mul(count);
    if bytes > 1 << 20 {
        crate::util::Built::new("repeat").reserve(bytes.saturating_mul(2))?;
    }
    Ok(out(Value::Array(vec![value; count])))
}

pub fn array_length(args: &[Val]) -> Result<Out> {
    Ok(parse_array(arg(args, 0)).map(|a| a.len() as i64).into())
}

pub fn array_slice(args: &[Val]) -> Result<Out> {
    let (Some(items), Some(start), Some(end)) = (parse_array(arg(args, 0)), arg(args, 1).long(), arg(args, 2).long())
    else {
        return Ok(Out::Null);
    };
    let len = items.len() as i64;
    let start = from_end(start, items.len()).max(0);
    let end = from_end(end, items.len()).min(len - 1);
    if start > end || start >= len {
        return Ok(out(Value::Array(Vec::new())));
    }
    Ok(out(Value::Array(items[start as usize..=end as usize].to_vec())))
}

/// The stable order of `items` (nulls last unless `nulls_last` is false).
fn sort_order(items: &[Value], descending: bool, nulls_last: bool) -> Vec<usize> {
    let mut order: Vec<usize> = (0..items.len()).collect();
    order.sort_by(|&i, &j| {
        let (a, b) = (&items[i], &items[j]);
        match (a.is_null(), b.is_null()) {
            (true, true) => std::cmp::Ordering::Equal,
            (true, false) if nulls_last => std::cmp::Ordering::Greater,
            (true, false) => std::cmp::Ordering::Less,
            (false, true) if nulls_last => std::cmp::Ordering::Less,
            (false, true) => std::cmp::Ordering::Greater,
            _ if descending => compare(b, a),
            _ => compare(a, b),
        }
    });
    order
}

/// `array_sort_asc(a [, b, ...] [, nulls_last])`: `a` sorted; with further arrays (of `a`'s
/// length, else null), the array of all of them, each in the order that sorts `a` (a
/// top-level `project`/`extend` item gets one column per array instead, see the planner).
fn sort(args: &[Val], descending: bool) -> Result<Out> {
    let mut arrays = Vec::with_capacity(args.len());
    let mut nulls_last = true;
    for (index, value) in args.iter().enumerate() {
        match value {
            Val::Bool(flag) if index > 0 && index == args.len() - 1 => nulls_last = *flag,
            Val::Null if index > 0 && index == args.len() - 1 => {}
            other => match parse_array(*other) {
                Some(items) => arrays.push(items),
                None => return Ok(Out::Null),
            },
        }
    }
    let Some(first) = arrays.first() else {
        return Ok(Out::Null);
    };
    if arrays.iter().any(|a| a.len() != first.len()) {
        return Ok(Out::Null);
    }
    let order = sort_order(first, descending, nulls_last);
    let mut sorted: Vec<Value> = arrays
        .iter()
        .map(|a| Value::Array(order.iter().map(|i| a[*i].clone()).collect()))
        .collect();
    Ok(out(if sorted.len() == 1 {
        sorted.remove(0)
    } else {
        Value::Array(sorted)
    }))
}

pub fn array_sort_asc(args: &[Val]) -> Result<Out> {
    sort(args, false)
}

pub fn array_sort_desc(args: &[Val]) -> Result<Out> {
    sort(args, true)
}

/// `array_sort_asc(keys, other, ...)` gives each further array in the order that sorts the
/// first: this reorders `args[1]` by the sort of `args[0]` (`args[2]`: nulls last). Arrays of
/// different lengths give null.
fn sort_by(args: &[Val], descending: bool) -> Result<Out> {
    let (Some(keys), Some(target)) = (parse_array(arg(args, 0)), parse_array(arg(args, 1))) else {
        return Ok(Out::Null);
    };
    if keys.len() != target.len() {
        return Ok(Out::Null);
    }
    let nulls_last = arg(args, 2).bool().unwrap_or(true);
    let order = sort_order(&keys, descending, nulls_last);
    Ok(out(Value::Array(
        order.into_iter().map(|i| target[i].clone()).collect(),
    )))
}

/// The planner's lowering of the further arrays of a multi-array `array_sort_asc`.
pub fn array_sort_by_asc(args: &[Val]) -> Result<Out> {
    sort_by(args, false)
}

/// The planner's lowering of the further arrays of a multi-array `array_sort_desc`.
pub fn array_sort_by_desc(args: &[Val]) -> Result<Out> {
    sort_by(args, true)
}

pub fn array_concat(args: &[Val]) -> Result<Out> {
    let mut all = Vec::new();
    for v in args {
        match parse_array(*v) {
            Some(items) => all.extend(items),
            None => return Ok(Out::Null),
        }
    }
    Ok(out(Value::Array(all)))
}

pub fn array_reverse(args: &[Val]) -> Result<Out> {
    Ok(out_opt(parse_array(arg(args, 0)).map(|mut items| {
        items.reverse();
        Value::Array(items)
    })))
}

/// `array_index_of(array, value[, start[, length[, occurrence]]])`.
pub fn array_index_of(args: &[Val]) -> Result<Out> {
    let Some(items) = parse_array(arg(args, 0)) else {
        return Ok(Out::Null);
    };
    let Some(needle) = parse(arg(args, 1)) else {
        return Ok(Out::Null);
    };
    let len = items.len();
    let start = match arg(args, 2) {
        Val::Null => 0,
        v => match v.long() {
            Some(s) => from_end(s, len),
            None => return Ok(Out::Null),
        },
    };
    if start < 0 || start as usize > len {
        return Ok(Out::Null);
    }
    let start = start as usize;
    let end = match arg(args, 3).long() {
        Some(n) if n >= 0 => (start + n as usize).min(len),
        _ => len,
    };
    let occurrence = arg(args, 4).long().unwrap_or(1);
    if occurrence < 1 {
        return Ok(Out::Null);
    }
    let mut seen = 0;
    for (i, item) in items[start..end].iter().enumerate() {
        if same(item, &needle) {
            seen += 1;
            if seen == occurrence {
                return Ok(Out::Long((start + i) as i64));
            }
        }
    }
    Ok(Out::Long(-1))
}

pub fn array_sum(args: &[Val]) -> Result<Out> {
    let Some(items) = parse_array(arg(args, 0)) else {
        return Ok(Out::Null);
    };
    let mut sum = 0.0;
    for item in &items {
        match item {
            Value::Number(n) => sum += n.as_f64().unwrap_or(0.0),
            _ => return Ok(Out::Null),
        }
    }
    Ok(Out::Real(sum))
}

/// `array_iff(condition_array, when_true, when_false)`.
pub fn array_iff(args: &[Val]) -> Result<Out> {
    let Some(conditions) = parse_array(arg(args, 0)) else {
        return Ok(Out::Null);
    };
    let when_true = parse(arg(args, 1)).unwrap_or(Value::Null);
    let when_false = parse(arg(args, 2)).unwrap_or(Value::Null);
    let pick = |source: &Value, i: usize| match source {
        Value::Array(items) => items.get(i).cloned().unwrap_or(Value::Null),
        other => other.clone(),
    };
    let result = conditions
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let truth = match c {
                Value::Bool(b) => Some(*b),
                Value::Number(n) => Some(n.as_f64().is_some_and(|x| x != 0.0)),
                _ => None,
            };
            match truth {
                Some(true) => pick(&when_true, i),
                Some(false) => pick(&when_false, i),
                None => Value::Null,
            }
        })
        .collect();
    Ok(out(Value::Array(result)))
}

fn shift(args: &[Val], left: bool) -> Result<Out> {
    let (Some(items), Some(count)) = (parse_array(arg(args, 0)), arg(args, 1).long()) else {
        return Ok(Out::Null);
    };
    let fill = if args.len() > 2 {
        parse(arg(args, 2)).unwrap_or(Value::Null)
    } else {
        Value::Null
    };
    let len = items.len() as i64;
    let count = if left { count } else { -count };
    let result = (0..len)
        .map(|i| {
            let source = i + count;
            if (0..len).contains(&source) {
                items[source as usize].clone()
            } else {
                fill.clone()
            }
        })
        .collect();
    Ok(out(Value::Array(result)))
}

pub fn array_shift_left(args: &[Val]) -> Result<Out> {
    shift(args, true)
}

pub fn array_shift_right(args: &[Val]) -> Result<Out> {
    shift(args, false)
}

fn rotate(args: &[Val], left: bool) -> Result<Out> {
    let (Some(mut items), Some(count)) = (parse_array(arg(args, 0)), arg(args, 1).long()) else {
        return Ok(Out::Null);
    };
    if !items.is_empty() {
        let len = items.len() as i64;
        let by = (if left { count } else { -count }).rem_euclid(len) as usize;
        items.rotate_left(by);
    }
    Ok(out(Value::Array(items)))
}

pub fn array_rotate_left(args: &[Val]) -> Result<Out> {
    rotate(args, true)
}

pub fn array_rotate_right(args: &[Val]) -> Result<Out> {
    rotate(args, false)
}

/// `array_split(array, index)`: index is a number or an array of numbers.
pub fn array_split(args: &[Val]) -> Result<Out> {
    let Some(items) = parse_array(arg(args, 0)) else {
        return Ok(Out::Null);
    };
    let indices: Vec<i64> = match parse(arg(args, 1)) {
        Some(Value::Array(list)) => list.iter().filter_map(|v| json::as_real(v).map(|r| r as i64)).collect(),
        Some(Value::Number(n)) => vec![n.as_f64().unwrap_or(0.0) as i64],
        _ => return Ok(Out::Null),
    };
    let len = items.len();
    let mut parts = Vec::with_capacity(indices.len() + 1);
    let mut from = 0usize;
    for index in indices {
        let to = from_end(index, len).clamp(0, len as i64) as usize;
        let to = to.max(from);
        parts.push(Value::Array(items[from..to].to_vec()));
        from = to;
    }
    parts.push(Value::Array(items[from..].to_vec()));
    Ok(out(Value::Array(parts)))
}

/// The arrays of every argument, `None` when one is not an array.
fn all_arrays(args: &[Val]) -> Option<Vec<Vec<Value>>> {
    args.iter().map(|v| parse_array(*v)).collect()
}

pub fn set_union(args: &[Val]) -> Result<Out> {
    Ok(out_opt(
        all_arrays(args).map(|arrays| Value::Array(distinct(arrays.into_iter().flatten()))),
    ))
}

pub fn set_intersect(args: &[Val]) -> Result<Out> {
    Ok(out_opt(all_arrays(args).map(|mut arrays| {
        let first = if arrays.is_empty() {
            Vec::new()
        } else {
            arrays.remove(0)
        };
        let kept = first
            .into_iter()
            .filter(|item| arrays.iter().all(|other| other.iter().any(|o| same(o, item))));
        Value::Array(distinct(kept))
    })))
}

pub fn set_difference(args: &[Val]) -> Result<Out> {
    Ok(out_opt(all_arrays(args).map(|mut arrays| {
        let first = if arrays.is_empty() {
            Vec::new()
        } else {
            arrays.remove(0)
        };
        let kept = first
            .into_iter()
            .filter(|item| !arrays.iter().any(|other| other.iter().any(|o| same(o, item))));
        Value::Array(distinct(kept))
    })))
}

pub fn set_has_element(args: &[Val]) -> Result<Out> {
    let (Some(items), Some(needle)) = (parse_array(arg(args, 0)), parse(arg(args, 1))) else {
        return Ok(Out::Null);
    };
    Ok(Out::Bool(items.iter().any(|item| same(item, &needle))))
}

/// `jaccard_index(set1, set2)`: distinct common elements over distinct elements of either.
pub fn jaccard_index(args: &[Val]) -> Result<Out> {
    let (Some(a), Some(b)) = (parse_array(arg(args, 0)), parse_array(arg(args, 1))) else {
        return Ok(Out::Null);
    };
    let a = distinct(a);
    let b = distinct(b);
    let common = a.iter().filter(|x| b.iter().any(|y| same(x, y))).count();
    let union = a.len() + b.len() - common;
    Ok(if union == 0 {
        Out::Real(f64::NAN)
    } else {
        Out::Real(common as f64 / union as f64)
    })
}

pub fn zip(args: &[Val]) -> Result<Out> {
    let Some(arrays) = all_arrays(args) else {
        return Ok(Out::Null);
    };
    let longest = arrays.iter().map(Vec::len).max().unwrap_or(0);
    let rows = (0..longest)
        .map(|i| {
            Value::Array(
                arrays
                    .iter()
                    .map(|a| a.get(i).cloned().unwrap_or(Value::Null))
                    .collect(),
            )
        })
        .collect();
    Ok(out(Value::Array(rows)))
}

/// `strcat_array(array, delimiter)`: a string.
pub fn strcat_array(args: &[Val]) -> Result<Out> {
    let Some(items) = parse_array(arg(args, 0)) else {
        return Ok(Out::Str(String::new()));
    };
    let parts: Vec<String> = items.iter().map(element_text).collect();
    Ok(Out::Str(parts.join(str_arg(args, 1))))
}

/// `split(source, delimiter[, index])`: a dynamic array of strings.
pub fn split(args: &[Val]) -> Result<Out> {
    let source = str_arg(args, 0);
    let delimiter = str_arg(args, 1);
    let parts: Vec<Value> = if delimiter.is_empty() {
        vec![Value::String(source.to_string())]
    } else {
        // Millions of pieces build far more than the text they come from: counted as built.
        let mut built = (source.len() > crate::util::METERED_TEXT).then(|| crate::util::Built::new("split"));
        let mut parts = Vec::new();
        for piece in source.split(delimiter) {
            if let Some(built) = built.as_mut() {
                built.room_for_one_more(&parts)?;
                built.add(piece.len())?;
            }
            parts.push(Value::String(piece.to_string()));
        }
        parts
    };
    match arg(args, 2) {
        Val::Null => Ok(out(Value::Array(parts))),
        v => {
            let Some(index) = v.long() else {
                return Ok(Out::Null);
            };
            let index = from_end(index, parts.len());
            let picked = usize::try_from(index).ok().and_then(|i| parts.get(i).cloned());
            Ok(out(Value::Array(picked.into_iter().collect())))
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::testing::{d, l, run, s};

    #[test]
    fn repeat_makes_copies() {
        assert_eq!(run("repeat", &[l(1), l(3)]), "[1,1,1]");
        assert_eq!(run("repeat", &[d(r#""a""#), l(2)]), r#"["a","a"]"#);
        assert_eq!(run("repeat", &[l(1), l(0)]), "[]");
        assert_eq!(run("repeat", &[l(1), l(-1)]), "null");
        assert!(crate::testing::call("repeat", &[l(1), l(1 << 40)]).is_err());
    }

    #[test]
    fn packing_and_length() {
        assert_eq!(run("pack_array", &[d("1"), d("\"a\""), d("[2]")]), "[1,\"a\",[2]]");
        assert_eq!(run("array_length", &[d("[1,2,3]")]), "3");
        assert_eq!(run("array_length", &[d("{\"a\":1}")]), "null");
        assert_eq!(run("array_length", &[d("[]")]), "0");
    }

    #[test]
    fn slicing() {
        let a = d("[1,2,3]");
        assert_eq!(run("array_slice", &[a.clone(), l(1), l(2)]), "[2,3]");
        assert_eq!(run("array_slice", &[a.clone(), l(1), l(-1)]), "[2,3]");
        assert_eq!(run("array_slice", &[a.clone(), l(-2), l(-1)]), "[2,3]");
        assert_eq!(run("array_slice", &[a.clone(), l(2), l(1)]), "[]");
        assert_eq!(run("array_slice", &[a, l(0), l(10)]), "[1,2,3]");
    }

    #[test]
    fn sorting() {
        let a = d("[\"b\",null,1,\"a\",3,2]");
        assert_eq!(
            run("array_sort_asc", std::slice::from_ref(&a)),
            "[1,2,3,\"a\",\"b\",null]"
        );
        assert_eq!(
            run("array_sort_desc", std::slice::from_ref(&a)),
            "[\"b\",\"a\",3,2,1,null]"
        );
        assert_eq!(
            run("array_sort_asc", &[a, crate::testing::b(false)]),
            "[null,1,2,3,\"a\",\"b\"]"
        );
        assert_eq!(
            run("array_sort_asc", &[d("[\"John\",\"Paul\",\"George\",\"Ringo\"]")]),
            "[\"George\",\"John\",\"Paul\",\"Ringo\"]"
        );
        let keys = d("[1,3,4,5,2]");
        let other = d("[\"a\",\"b\",\"c\",\"d\",\"e\"]");
        assert_eq!(
            run("__array_sort_by_asc", &[keys.clone(), other.clone()]),
            "[\"a\",\"e\",\"b\",\"c\",\"d\"]"
        );
        assert_eq!(
            run("__array_sort_by_desc", &[keys, other]),
            "[\"d\",\"c\",\"b\",\"e\",\"a\"]"
        );
        assert_eq!(
            run("__array_sort_by_asc", &[d("[1,2]"), d("[1]")]),
            "null",
            "lengths differ"
        );
        // Inside an expression the multi-array form is the array of the sorted arrays.
        assert_eq!(
            run("array_sort_asc", &[keys_again(), d("[\"a\",\"b\",\"c\",\"d\",\"e\"]")]),
            "[[1,2,3,4,5],[\"a\",\"e\",\"b\",\"c\",\"d\"]]"
        );
        assert_eq!(
            run(
                "array_sort_desc",
                &[d("[1,null,2]"), d("[10,20,30]"), crate::testing::b(false)]
            ),
            "[[null,2,1],[20,30,10]]"
        );
        assert_eq!(run("array_sort_asc", &[d("[1,2]"), d("[1]")]), "null", "lengths differ");
    }

    fn keys_again() -> datafusion::logical_expr::ColumnarValue {
        d("[1,3,4,5,2]")
    }

    #[test]
    fn concat_reverse_index_sum() {
        assert_eq!(run("array_concat", &[d("[1,2]"), d("[3]")]), "[1,2,3]");
        assert_eq!(run("array_concat", &[d("[1,2]"), d("3")]), "null");
        assert_eq!(
            run("array_reverse", &[d("[\"this\",\"is\",\"an\"]")]),
            "[\"an\",\"is\",\"this\"]"
        );
        let a = d("[1,2,3,4,5,2,3]");
        assert_eq!(run("array_index_of", &[a.clone(), d("2")]), "1");
        assert_eq!(run("array_index_of", &[a.clone(), d("7")]), "-1");
        assert_eq!(run("array_index_of", &[a.clone(), d("2"), l(2)]), "5");
        assert_eq!(run("array_index_of", &[a.clone(), d("2"), l(0), l(-1), l(2)]), "5");
        assert_eq!(run("array_index_of", &[a.clone(), d("3"), l(-3)]), "6");
        assert_eq!(run("array_index_of", &[d("[\"a\",\"b\"]"), d("\"b\"")]), "1");
        assert_eq!(run("array_sum", &[d("[1,2,3.5]")]), "6.5");
        assert_eq!(run("array_sum", &[d("[1,\"a\"]")]), "null");
    }

    #[test]
    fn iff() {
        let r = run("array_iff", &[d("[true,false,true]"), d("[1,2,3]"), d("[4,5,6]")]);
        assert_eq!(r, "[1,5,3]");
        let r = run("array_iif", &[d("[1,0,50]"), d("\"yes\""), d("\"no\"")]);
        assert_eq!(r, "[\"yes\",\"no\",\"yes\"]");
        let r = run("array_iff", &[d("[\"x\",null]"), d("1"), d("0")]);
        assert_eq!(r, "[null,null]");
        let r = run("array_iff", &[d("[true,true,true]"), d("[1,2]"), d("[3,4]")]);
        assert_eq!(r, "[1,2,null]");
    }

    #[test]
    fn shifting_and_rotating() {
        let a = d("[1,2,3,4,5]");
        assert_eq!(run("array_shift_left", &[a.clone(), l(2)]), "[3,4,5,null,null]");
        assert_eq!(run("array_shift_left", &[a.clone(), l(2), d("-1")]), "[3,4,5,-1,-1]");
        assert_eq!(run("array_shift_left", &[a.clone(), l(-2)]), "[null,null,1,2,3]");
        assert_eq!(run("array_shift_right", &[a.clone(), l(1)]), "[null,1,2,3,4]");
        assert_eq!(run("array_rotate_left", &[a.clone(), l(2)]), "[3,4,5,1,2]");
        assert_eq!(run("array_rotate_left", &[a.clone(), l(-2)]), "[4,5,1,2,3]");
        assert_eq!(run("array_rotate_right", &[a.clone(), l(2)]), "[4,5,1,2,3]");
        assert_eq!(run("array_split", &[a.clone(), d("2")]), "[[1,2],[3,4,5]]");
        assert_eq!(run("array_split", &[a, d("[1,3]")]), "[[1],[2,3],[4,5]]");
    }

    #[test]
    fn sets() {
        let r = run("set_union", &[d("[1,2,3]"), d("[1,2,3,4,5]"), d("[6]")]);
        assert_eq!(r, "[1,2,3,4,5,6]");
        let r = run("set_intersect", &[d("[1,2,3]"), d("[1,2,3,4,5]"), d("[1,3,5]")]);
        assert_eq!(r, "[1,3]");
        let r = run("set_difference", &[d("[1,2,3]"), d("[1,2,3,4,5]")]);
        assert_eq!(r, "[]");
        let r = run("set_difference", &[d("[1,2,3,1]"), d("[2]")]);
        assert_eq!(r, "[1,3]");
        assert_eq!(run("set_has_element", &[d("[\"this\",\"is\"]"), d("\"is\"")]), "true");
        assert_eq!(run("set_has_element", &[d("[1,2]"), d("3")]), "false");
        assert_eq!(run("jaccard_index", &[d("[1,2,3]"), d("[1,2,3,4]")]), "0.75");
        assert_eq!(run("jaccard_index", &[d("[1,2]"), d("[3]")]), "0");
    }

    #[test]
    fn zipping_joining_splitting() {
        assert_eq!(run("zip", &[d("[1,3,5]"), d("[2,4,6]")]), "[[1,2],[3,4],[5,6]]");
        assert_eq!(run("zip", &[d("[1,3,5]"), d("[2,4]")]), "[[1,2],[3,4],[5,null]]");
        assert_eq!(run("strcat_array", &[d("[1,\"2\",null]"), s("-")]), "1-2-");
        assert_eq!(run("split", &[s("aa_bb"), s("_")]), "[\"aa\",\"bb\"]");
        assert_eq!(run("split", &[s("aaa_bbb_ccc"), s("_"), l(1)]), "[\"bbb\"]");
        assert_eq!(run("split", &[s("aa_bb"), s("_"), l(5)]), "[]");
        assert_eq!(run("split", &[s(""), s("_")]), "[\"\"]");
        assert_eq!(run("split", &[s("aabbcc"), s("bb")]), "[\"aa\",\"cc\"]");
    }
}
