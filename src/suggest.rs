//! "Did you mean" hints: the closest known name to a misspelled one.

/// The candidate closest to `input` by edit distance, if it is close enough to be a plausible typo
/// (distance at most a third of the longer name, and at least 1 edit allowed).
pub fn closest<'a>(input: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    plausible(input, candidates).into_iter().next()
}

/// Up to three plausible typo targets (the closest and any one edit further), closest first, as `"a", "b"` for a hint; `None` if none.
pub fn did_you_mean<'a>(
    input: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<String> {
    let found = plausible(input, candidates);
    if found.is_empty() {
        return None;
    }
    let quoted: Vec<String> = found.iter().take(3).map(|c| format!("\"{c}\"")).collect();
    Some(format!("did you mean {}?", quoted.join(" or ")))
}

fn plausible<'a>(input: &str, candidates: impl IntoIterator<Item = &'a str>) -> Vec<&'a str> {
    let input_lower = input.to_ascii_lowercase();
    let mut found: Vec<(usize, &str)> = candidates
        .into_iter()
        .map(|c| {
            let c_lower = c.to_ascii_lowercase();
            // The short name of a preset (`h100` for `h100-sxm`, `gb200` for `gb200-nvl72`):
            // the candidate's leading words, whole, are the closest there is.
            let shortened = c_lower
                .strip_prefix(&input_lower)
                .is_some_and(|rest| rest.starts_with(['-', '_']));
            let d = if shortened {
                0
            } else {
                edit_distance(&input_lower, &c_lower)
            };
            (d, c)
        })
        .filter(|(d, c)| *d <= (input.len().max(c.len()) / 3).max(1))
        .collect();
    found.sort_by_key(|&(d, _)| d);
    // Offer the best match and any within one more edit of it, not every remote possibility.
    let best = found.first().map_or(0, |&(d, _)| d);
    found
        .into_iter()
        .take_while(|&(d, _)| d <= best + 1)
        .map(|(_, c)| c)
        .collect()
}

/// Levenshtein distance over bytes (ids are ASCII).
fn edit_distance(a: &str, b: &str) -> usize {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur = vec![0; b.len() + 1];
    for (i, &ca) in a.iter().enumerate() {
        cur[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let substitution = prev[j] + usize::from(ca != cb);
            cur[j + 1] = substitution.min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distances() {
        assert_eq!(edit_distance("h100-sxm", "h100-sxm"), 0);
        assert_eq!(edit_distance("h100-sx", "h100-sxm"), 1);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
    }

    #[test]
    fn suggests_typos_but_not_strangers() {
        let ids = ["h100-sxm", "h200-sxm", "b200", "mi300x"];
        assert_eq!(closest("h100-sx", ids), Some("h100-sxm"));
        assert_eq!(closest("MI300X", ids), Some("mi300x"));
        assert_eq!(closest("tpu-v5p", ids), None);
    }

    #[test]
    fn offers_every_close_candidate() {
        let ids = ["llama-2-70b", "llama-3.1-70b", "llama-3.1-8b"];
        assert_eq!(
            did_you_mean("llama-3-70b", ids).unwrap(),
            "did you mean \"llama-2-70b\" or \"llama-3.1-70b\"?"
        );
        assert_eq!(did_you_mean("qwen", ids), None);
    }

    /// A preset's short name points at the preset: `h100` at `h100-sxm` (not `b200`, one edit
    /// closer by spelling than the whole id), `gb200` at `gb200-nvl72`.
    #[test]
    fn a_short_name_points_at_its_preset() {
        let ids = [
            "a100-80gb",
            "h100-sxm",
            "h200-sxm",
            "b200",
            "gb200-nvl72",
            "mi300x",
        ];
        assert_eq!(
            did_you_mean("h100", ids).unwrap(),
            "did you mean \"h100-sxm\"?"
        );
        assert_eq!(closest("gb200", ids), Some("gb200-nvl72"));
        assert_eq!(closest("a100", ids), Some("a100-80gb"));
        // A whole word only: `h1` is no preset's short name.
        assert_eq!(closest("h1", ids), None);
    }
}
