//! Tokenizers: a Hugging Face model folder's byte-level BPE tokenizer
//! (`tokenizer.json`), encoding and decoding exactly as the `tokenizers`
//! library does (docs/tokenizer.md lists what is supported).

use std::ffi::c_char;
use std::path::Path;
use std::ptr::NonNull;

use fp8rl_sys as sys;

use crate::args::{path_to_c, to_i64, to_usize};
use crate::error::{check, Error, Result, Status};

/// The special ids a model folder names, from `tokenizer_config.json` and
/// `generation_config.json` ([`Tokenizer::special_ids`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SpecialTokenIds {
    /// Beginning of sequence, where the folder names one.
    pub bos: Option<i32>,
    /// End-of-sequence ids: `tokenizer_config.json`'s, then
    /// `generation_config.json`'s, without repeats (at most
    /// [`MAX_EOS_IDS`]); empty where the folder names none.
    pub eos: Vec<i32>,
    /// Padding, where the folder names one.
    pub pad: Option<i32>,
    /// `tokenizer_config.json`'s `add_bos_token`, where stated. Reported,
    /// not applied: what [`Tokenizer::encode`] adds is the post-processor's.
    pub add_bos_token: Option<bool>,
}

/// The most EOS ids [`SpecialTokenIds::eos`] holds.
pub const MAX_EOS_IDS: usize = sys::FP8RL_MAX_EOS_IDS as usize;

/// A loaded tokenizer (`fp8rl_tokenizer`): [`Tokenizer::load`] from a model
/// folder, or [`Policy::tokenizer`](crate::Policy::tokenizer) for a policy
/// loaded from one.
///
/// Text goes in as bytes (`&str`, `String`, `&[u8]`, ...): bytes that are not
/// UTF-8 are repaired first, each ill-formed sequence becoming U+FFFD as
/// `String::from_utf8_lossy` does, so the ids are those `tokenizers` gives
/// for the repaired string.
///
/// ```no_run
/// use fp8rl::Tokenizer;
/// let tokenizer = Tokenizer::load("models/Qwen2.5-0.5B")?;
/// let ids = tokenizer.encode("Hello world", true)?;
/// assert_eq!(tokenizer.decode(&ids, true)?, "Hello world");
/// # Ok::<(), fp8rl::Error>(())
/// ```
pub struct Tokenizer {
    raw: NonNull<sys::fp8rl_tokenizer>,
}

// SAFETY: a tokenizer is immutable once loaded and the header documents every
// tokenizer function except fp8rl_tokenizer_destroy as thread-safe; destroy
// only runs from `Drop`, which owns the tokenizer.
unsafe impl Send for Tokenizer {}
// SAFETY: see `Send`: shared references only reach the thread-safe functions.
unsafe impl Sync for Tokenizer {}

impl Tokenizer {
    /// Takes ownership of a tokenizer the library made.
    pub(crate) fn from_raw(raw: *mut sys::fp8rl_tokenizer) -> Self {
        Self { raw: NonNull::new(raw).expect("fp8rl created a NULL tokenizer") }
    }

    /// Loads `<folder>/tokenizer.json` and, where present,
    /// `tokenizer_config.json` and `generation_config.json`.
    ///
    /// Fails with [`Status::Io`] if `tokenizer.json` cannot be read,
    /// [`Status::CorruptData`] for malformed files (naming file and field),
    /// and [`Status::Unsupported`] for a tokenizer type or option fp8rl does
    /// not implement (or a library built without PCRE2).
    pub fn load(folder: impl AsRef<Path>) -> Result<Self> {
        let folder = path_to_c("Tokenizer::load", folder.as_ref())?;
        let mut raw = std::ptr::null_mut();
        // SAFETY: a NUL-terminated path and a valid out-pointer.
        check(unsafe { sys::fp8rl_tokenizer_load(folder.as_ptr(), &mut raw) })?;
        Ok(Self::from_raw(raw))
    }

    /// The ids of `text`; with `add_special_tokens`, the post-processor's
    /// tokens too (e.g. Llama 3's BOS).
    pub fn encode(&self, text: impl AsRef<[u8]>, add_special_tokens: bool) -> Result<Vec<i32>> {
        let text = text.as_ref();
        let bytes = to_i64("Tokenizer::encode: text", text.len())?;
        // One call where the guess fits (a byte gives at most 3 ids, when it
        // is repaired to U+FFFD), a second where the post-processor adds more.
        let mut capacity = text.len().saturating_mul(3).saturating_add(16);
        loop {
            let mut ids = vec![0i32; capacity];
            let mut count = -1i64;
            // SAFETY: a valid tokenizer; `text` holds `bytes` bytes and `ids` `capacity` entries.
            let status = unsafe {
                sys::fp8rl_tokenizer_encode(
                    self.raw.as_ptr(),
                    text.as_ptr().cast::<c_char>(),
                    bytes,
                    i32::from(add_special_tokens),
                    ids.as_mut_ptr(),
                    to_i64("capacity", capacity)?,
                    &mut count,
                )
            };
            if status != sys::FP8RL_OK && to_usize(count) > capacity {
                capacity = to_usize(count);
                continue;
            }
            check(status)?;
            ids.truncate(to_usize(count));
            return Ok(ids);
        }
    }

    /// The ids of each text, as [`encode`](Self::encode) gives them, in one call.
    pub fn encode_batch<T: AsRef<[u8]>>(&self, texts: &[T], add_special_tokens: bool) -> Result<Vec<Vec<i32>>> {
        let pointers: Vec<*const c_char> = texts.iter().map(|t| t.as_ref().as_ptr().cast::<c_char>()).collect();
        let sizes = texts
            .iter()
            .map(|t| to_i64("Tokenizer::encode_batch: text", t.as_ref().len()))
            .collect::<Result<Vec<_>>>()?;
        let mut raw = std::ptr::null_mut();
        // SAFETY: a valid tokenizer; pointers[i] holds sizes[i] bytes (borrowed
        // from `texts`, alive for the call); the library only reads `pointers`.
        check(unsafe {
            sys::fp8rl_tokenizer_encode_batch(
                self.raw.as_ptr(),
                pointers.as_ptr(),
                sizes.as_ptr(),
                to_i64("Tokenizer::encode_batch: texts", texts.len())?,
                i32::from(add_special_tokens),
                &mut raw,
            )
        })?;
        let encoding = Encoding(NonNull::new(raw).expect("fp8rl created a NULL encoding"));
        (0..texts.len())
            .map(|index| {
                let (mut ids, mut count) = (std::ptr::null::<i32>(), 0i64);
                // SAFETY: a valid encoding and out-pointers; index < its count.
                check(unsafe { sys::fp8rl_encoding_get(encoding.0.as_ptr(), index as i64, &mut ids, &mut count) })?;
                // SAFETY: `count` ids at `ids`, valid until `encoding` drops (after the copy).
                Ok(unsafe { std::slice::from_raw_parts(ids, to_usize(count)) }.to_vec())
            })
            .collect()
    }

    /// The text of `ids`. Ids that name no token are skipped (as `tokenizers`
    /// does); bytes that do not form UTF-8 (ids cut inside a character)
    /// become U+FFFD. A negative id is [`Status::InvalidArgument`].
    pub fn decode(&self, ids: &[i32], skip_special_tokens: bool) -> Result<String> {
        let count = to_i64("Tokenizer::decode: ids", ids.len())?;
        let mut capacity = ids.len().saturating_mul(16).saturating_add(64);
        loop {
            let mut text = vec![0u8; capacity];
            let mut bytes = -1i64;
            // SAFETY: a valid tokenizer; `ids` holds `count` ids and `text` `capacity` bytes.
            let status = unsafe {
                sys::fp8rl_tokenizer_decode(
                    self.raw.as_ptr(),
                    ids.as_ptr(),
                    count,
                    i32::from(skip_special_tokens),
                    text.as_mut_ptr().cast::<c_char>(),
                    to_i64("capacity", capacity)?,
                    &mut bytes,
                )
            };
            if status != sys::FP8RL_OK && to_usize(bytes) > capacity {
                capacity = to_usize(bytes);
                continue;
            }
            check(status)?;
            text.truncate(to_usize(bytes));
            return utf8("Tokenizer::decode", text);
        }
    }

    /// The id of a token by its spelling in `tokenizer.json` (a space is
    /// `"Ġ"` in a byte-level vocabulary), or an added token's content; `None`
    /// when no token is spelled so.
    pub fn token_to_id(&self, token: impl AsRef<[u8]>) -> Result<Option<i32>> {
        let token = token.as_ref();
        let mut id = -1i32;
        // SAFETY: a valid tokenizer; `token` holds its length in bytes.
        check(unsafe {
            sys::fp8rl_tokenizer_token_to_id(
                self.raw.as_ptr(),
                token.as_ptr().cast::<c_char>(),
                to_i64("Tokenizer::token_to_id: token", token.len())?,
                &mut id,
            )
        })?;
        Ok((id >= 0).then_some(id))
    }

    /// The spelling of token `id` in `tokenizer.json` (byte-level: `"Ġworld"`).
    /// An id that names no token is [`Status::InvalidArgument`].
    pub fn id_to_piece(&self, id: i32) -> Result<String> {
        let mut bytes = 0i64;
        // SAFETY: a valid tokenizer; a size query (NULL buffer, capacity 0).
        check(unsafe { sys::fp8rl_tokenizer_id_to_piece(self.raw.as_ptr(), id, std::ptr::null_mut(), 0, &mut bytes) })?;
        let mut piece = vec![0u8; to_usize(bytes)];
        // SAFETY: `piece` holds `bytes` bytes.
        check(unsafe {
            sys::fp8rl_tokenizer_id_to_piece(
                self.raw.as_ptr(),
                id,
                piece.as_mut_ptr().cast::<c_char>(),
                bytes,
                &mut bytes,
            )
        })?;
        piece.truncate(to_usize(bytes));
        utf8("Tokenizer::id_to_piece", piece)
    }

    /// One past the largest id, added tokens included.
    pub fn vocab_size(&self) -> Result<usize> {
        let mut size = 0i64;
        // SAFETY: a valid tokenizer and out-pointer.
        check(unsafe { sys::fp8rl_tokenizer_vocab_size(self.raw.as_ptr(), &mut size) })?;
        Ok(to_usize(size))
    }

    /// The folder's special ids.
    pub fn special_ids(&self) -> Result<SpecialTokenIds> {
        // SAFETY: fp8rl_special_token_ids is plain integers; its init fills it.
        let mut ids = unsafe { crate::macros::c_defaults(sys::fp8rl_special_token_ids_init) };
        // SAFETY: a valid tokenizer and a struct with its struct_size set.
        check(unsafe { sys::fp8rl_tokenizer_special_ids(self.raw.as_ptr(), &mut ids) })?;
        let known = |id: i32| (id >= 0).then_some(id);
        let num_eos = to_usize(i64::from(ids.num_eos)).min(ids.eos.len());
        Ok(SpecialTokenIds {
            bos: known(ids.bos),
            eos: ids.eos[..num_eos].to_vec(),
            pad: known(ids.pad),
            add_bos_token: (ids.add_bos_token >= 0).then_some(ids.add_bos_token != 0),
        })
    }
}

impl Drop for Tokenizer {
    fn drop(&mut self) {
        // SAFETY: owned; destroy cannot fail.
        unsafe { sys::fp8rl_tokenizer_destroy(self.raw.as_ptr()) };
    }
}

impl std::fmt::Debug for Tokenizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tokenizer").field("vocab_size", &self.vocab_size().ok()).finish()
    }
}

/// The result of one encode_batch call, destroyed on drop.
struct Encoding(NonNull<sys::fp8rl_encoding>);

impl Drop for Encoding {
    fn drop(&mut self) {
        // SAFETY: owned; destroy cannot fail.
        unsafe { sys::fp8rl_encoding_destroy(self.0.as_ptr()) };
    }
}

/// The library's text output as a String (it is UTF-8 by contract).
fn utf8(function: &str, bytes: Vec<u8>) -> Result<String> {
    String::from_utf8(bytes)
        .map_err(|_| Error::new(Status::Internal, format!("{function}: the library returned text that is not UTF-8")))
}
