//! "Did you mean" hints: the closest known name to a misspelled one.

/// The candidate closest to `input` by edit distance, if it is close enough to be a plausible typo
/// (distance at most a third of the longer name, and at least 1 edit allowed).
pub fn closest<'a>(input: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let input_lower = input.to_ascii_lowercase();
    candidates
        .into_iter()
        .map(|c| (edit_distance(&input_lower, &c.to_ascii_lowercase()), c))
        .filter(|(d, c)| *d <= (input.len().max(c.len()) / 3).max(1))
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
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
}
