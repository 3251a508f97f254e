//! Checks and conversions of arguments before they cross into C.
//!
//! The binding checks only what C cannot: that slices are as long as the
//! counts C will read through their pointers (memory safety), and that
//! lengths which C takes once agree. Values (token ids, sizes, options) are
//! the library's to check, so its messages stay the single source.

use std::ffi::CString;
use std::path::Path;

use crate::error::{Error, Result};

/// A length or size as C's int64_t.
pub(crate) fn to_i64(what: &str, value: usize) -> Result<i64> {
    i64::try_from(value).map_err(|_| Error::invalid_argument(format!("{what}: {value} does not fit in int64_t")))
}

/// A rank or world size as C's int32_t.
pub(crate) fn to_i32(what: &str, value: usize) -> Result<i32> {
    i32::try_from(value).map_err(|_| Error::invalid_argument(format!("{what}: {value} does not fit in int32_t")))
}

/// A count C returned, as a usize (never negative for a successful call).
pub(crate) fn to_usize(value: i64) -> usize {
    usize::try_from(value).unwrap_or(0)
}

/// A path as the NUL-terminated bytes C expects.
pub(crate) fn path_to_c(function: &str, path: &Path) -> Result<CString> {
    #[cfg(unix)]
    let bytes = std::os::unix::ffi::OsStrExt::as_bytes(path.as_os_str()).to_vec();
    #[cfg(not(unix))]
    let bytes = path
        .to_str()
        .ok_or_else(|| Error::invalid_argument(format!("{function}: the path {path:?} is not valid Unicode")))?
        .as_bytes()
        .to_vec();
    CString::new(bytes)
        .map_err(|_| Error::invalid_argument(format!("{function}: the path {path:?} contains a NUL byte")))
}

/// Checks that `offsets` cut `total` items into sequences without reading
/// past them: every offset in [0, total], never decreasing, the last one
/// `total`. Returns the number of sequences (offsets.len() - 1), which may be
/// 0 (the library then says how many it needs).
pub(crate) fn sequence_count(function: &str, offsets: &[i64], total: usize, items: &str) -> Result<i64> {
    let Some(&last) = offsets.last() else {
        return Err(Error::invalid_argument(format!(
            "{function}: offsets is empty; it needs one more entry than there are sequences"
        )));
    };
    let total_i64 = to_i64(items, total)?;
    if let Some(i) = offsets.iter().position(|&offset| offset < 0 || offset > total_i64) {
        return Err(Error::invalid_argument(format!(
            "{function}: offsets[{i}] = {} is outside the {total} {items}",
            offsets[i]
        )));
    }
    if let Some(i) = offsets.windows(2).position(|pair| pair[1] < pair[0]) {
        return Err(Error::invalid_argument(format!(
            "{function}: offsets decrease at {}: {} after {}",
            i + 1,
            offsets[i + 1],
            offsets[i]
        )));
    }
    if last != total_i64 {
        return Err(Error::invalid_argument(format!(
            "{function}: the last offset is {last}, but there are {total} {items}"
        )));
    }
    to_i64("offsets", offsets.len() - 1)
}

/// Checks a per-sequence slice has one entry per sequence.
pub(crate) fn per_sequence<T>(function: &str, name: &str, values: &[T], sequences: i64) -> Result<()> {
    if values.len() as i64 == sequences {
        Ok(())
    } else {
        Err(Error::invalid_argument(format!(
            "{function}: {name} has {} entries for {sequences} sequences",
            values.len()
        )))
    }
}

/// The number of completion tokens of sequences with the given prompt lengths
/// (0 when the lengths make no sense: the library then rejects them).
pub(crate) fn completion_tokens(total_tokens: usize, prompt_lengths: &[i64]) -> usize {
    let prompts = prompt_lengths.iter().try_fold(0i64, |sum, &length| sum.checked_add(length));
    match prompts {
        Some(prompts) if prompts >= 0 => total_tokens.saturating_sub(prompts as usize),
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Status;

    #[test]
    fn offsets_must_stay_inside_the_items() {
        assert_eq!(sequence_count("f", &[0, 3, 5], 5, "tokens"), Ok(2));
        assert_eq!(sequence_count("f", &[0], 0, "tokens"), Ok(0));
        for (offsets, needle) in [
            (&[][..], "offsets is empty"),
            (&[0, 6][..], "offsets[1] = 6 is outside the 5 tokens"),
            (&[-1, 5][..], "offsets[0] = -1"),
            (&[0, 4, 3, 5][..], "offsets decrease at 2"),
            (&[0, 4][..], "the last offset is 4, but there are 5 tokens"),
        ] {
            let error = sequence_count("f", offsets, 5, "tokens").unwrap_err();
            assert_eq!(error.status, Status::InvalidArgument);
            assert!(error.message.starts_with("f: ") && error.message.contains(needle), "{}", error.message);
        }
    }

    #[test]
    fn completion_tokens_tolerate_nonsense_lengths() {
        assert_eq!(completion_tokens(10, &[3, 4]), 3);
        assert_eq!(completion_tokens(10, &[30]), 0);
        assert_eq!(completion_tokens(10, &[-3]), 0);
        assert_eq!(completion_tokens(10, &[i64::MAX, 1]), 0);
    }
}
