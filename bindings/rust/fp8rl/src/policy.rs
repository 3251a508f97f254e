//! Policies: a model's weights, its precision recipe and compute copies.

use std::path::Path;
use std::ptr::NonNull;

use fp8rl_sys as sys;

use crate::args::path_to_c;
use crate::config::ModelConfig;
use crate::context::Context;
use crate::enums::DType;
use crate::error::{check, Result};
use crate::recipe::Recipe;
use crate::report::MemoryReport;
use crate::tokenizer::Tokenizer;

/// A model's FP32 master weights, its precision recipe and the compute copies
/// of the weights that recipe implies (`fp8rl_policy`).
///
/// A policy borrows the [`Context`] it lives on, so the context outlives it.
/// The library serializes every call on a policy through its context, like a
/// mutex: all methods take `&self`, even those that change the policy
/// ([`set_recipe`](Self::set_recipe), training through a
/// [`Trainer`](crate::Trainer)), and a policy may be shared between threads.
///
/// ```no_run
/// use fp8rl::{Backend, Context, ModelConfig, Policy, Recipe, SamplingOptions};
/// let context = Context::new(Backend::Cpu)?;
/// let policy = Policy::load(&context, "SmolLM2-135M")?;
/// policy.set_recipe(&Recipe::fp8())?;
/// let sampling = SamplingOptions::new().max_new_tokens(32);
/// let rollout = policy.generate(&[vec![1, 2, 3], vec![4, 5]], &[11, 12], &sampling)?;
/// for completion in &rollout {
///     println!("{:?} ({:?})", completion.tokens, completion.finish);
/// }
/// # Ok::<(), fp8rl::Error>(())
/// ```
///
/// The context cannot be dropped while a policy borrows it:
///
/// ```compile_fail
/// # use fp8rl::{Backend, Context, ModelConfig, Policy};
/// let context = Context::new(Backend::Cpu)?;
/// let policy = Policy::random(&context, &ModelConfig::new(), 1)?;
/// drop(context); // error: `context` is borrowed by `policy`
/// policy.parameter_count()?;
/// # Ok::<(), fp8rl::Error>(())
/// ```
pub struct Policy<'ctx> {
    raw: NonNull<sys::fp8rl_policy>,
    context: &'ctx Context,
}

// SAFETY: the header documents every policy function except
// fp8rl_policy_destroy as thread-safe ("calls on the policy's context are
// serialized"); destroy only runs from `Drop`/`close`, which own the policy,
// and trainers borrow it, so no other call is in flight then. The context
// reference is itself Send + Sync (Context is Sync).
unsafe impl Send for Policy<'_> {}
// SAFETY: see `Send`: shared references only reach the thread-safe functions.
unsafe impl Sync for Policy<'_> {}

impl<'ctx> Policy<'ctx> {
    fn from_raw(raw: *mut sys::fp8rl_policy, context: &'ctx Context) -> Self {
        let raw = NonNull::new(raw).expect("fp8rl created a NULL policy");
        Self { raw, context }
    }

    /// A policy with random weights, deterministic for config and seed (the
    /// same on every platform), and the default (BF16) recipe.
    ///
    /// An invalid configuration fails with
    /// [`Status::InvalidArgument`](crate::Status::InvalidArgument) and a
    /// message naming the field.
    pub fn random(context: &'ctx Context, config: &ModelConfig, seed: u64) -> Result<Self> {
        let config = config.to_c("Policy::random")?;
        let mut raw = std::ptr::null_mut();
        // SAFETY: a valid context, config and out-pointer.
        check(unsafe { sys::fp8rl_policy_create_random(context.as_ptr(), &config, seed, &mut raw) })?;
        Ok(Self::from_raw(raw, context))
    }

    /// Loads a policy from a Hugging Face model folder (`config.json` and
    /// `model.safetensors` or its sharded index; BF16, F16 or F32 tensors),
    /// with the default (BF16) recipe.
    ///
    /// Fails with [`Status::Io`](crate::Status::Io) if a file cannot be read,
    /// [`Status::CorruptData`](crate::Status::CorruptData) for malformed files
    /// and [`Status::Unsupported`](crate::Status::Unsupported) for other architectures.
    pub fn load(context: &'ctx Context, folder: impl AsRef<Path>) -> Result<Self> {
        let folder = path_to_c("Policy::load", folder.as_ref())?;
        let mut raw = std::ptr::null_mut();
        // SAFETY: a valid context, NUL-terminated path and out-pointer.
        check(unsafe { sys::fp8rl_policy_load(context.as_ptr(), folder.as_ptr(), &mut raw) })?;
        Ok(Self::from_raw(raw, context))
    }

    /// The tokenizer of the folder the policy was loaded from
    /// ([`Policy::load`]): its `tokenizer.json` and configs, read now. The
    /// tokenizer does not borrow the policy.
    ///
    /// A policy not loaded from a folder ([`Policy::random`]) fails with
    /// [`Status::InvalidArgument`](crate::Status::InvalidArgument); other
    /// errors as [`Tokenizer::load`].
    pub fn tokenizer(&self) -> Result<Tokenizer> {
        let mut raw = std::ptr::null_mut();
        // SAFETY: a valid policy and out-pointer.
        check(unsafe { sys::fp8rl_policy_load_tokenizer(self.raw.as_ptr(), &mut raw) })?;
        Ok(Tokenizer::from_raw(raw))
    }

    /// The context the policy lives on.
    pub fn context(&self) -> &'ctx Context {
        self.context
    }

    /// Writes the master weights as a Hugging Face model folder (created if
    /// needed), as [`DType::F32`] (exact) or [`DType::Bf16`]; [`Policy::load`]
    /// reads it back.
    pub fn save(&self, folder: impl AsRef<Path>, dtype: DType) -> Result<()> {
        let folder = path_to_c("Policy::save", folder.as_ref())?;
        // SAFETY: a valid policy and NUL-terminated path.
        check(unsafe { sys::fp8rl_policy_save(self.raw.as_ptr(), folder.as_ptr(), dtype.as_raw()) })
    }

    /// Writes the policy as an FP8 block-quantized Hugging Face checkpoint
    /// for serving engines (vLLM, SGLang); [`Policy::load`] does not read it back.
    pub fn export_fp8(&self, folder: impl AsRef<Path>) -> Result<()> {
        let folder = path_to_c("Policy::export_fp8", folder.as_ref())?;
        // SAFETY: a valid policy and NUL-terminated path.
        check(unsafe { sys::fp8rl_policy_export_fp8(self.raw.as_ptr(), folder.as_ptr()) })
    }

    /// The policy's architecture (head_dim is 0 when implied, so the config
    /// creates an equal policy).
    pub fn config(&self) -> Result<ModelConfig> {
        // SAFETY: plain C data (see c_defaults); init sets struct_size.
        let mut config = unsafe { crate::macros::c_defaults(sys::fp8rl_model_config_init) };
        // SAFETY: a valid policy and config.
        check(unsafe { sys::fp8rl_policy_get_config(self.raw.as_ptr(), &mut config) })?;
        Ok(ModelConfig::from_c(&config))
    }

    /// The number of weights of the policy's model.
    pub fn parameter_count(&self) -> Result<u64> {
        let mut count = 0i64;
        // SAFETY: a valid policy and out-pointer.
        check(unsafe { sys::fp8rl_policy_parameter_count(self.raw.as_ptr(), &mut count) })?;
        Ok(count as u64)
    }

    /// The memory the policy holds, by component (the trainer-only fields are 0).
    pub fn memory(&self) -> Result<MemoryReport> {
        let mut report = MemoryReport::empty_c();
        // SAFETY: a valid policy and report with struct_size set.
        check(unsafe { sys::fp8rl_policy_memory(self.raw.as_ptr(), &mut report) })?;
        Ok(MemoryReport::from_c(&report))
    }

    /// A 64-bit fingerprint of what the policy computes with: every compute
    /// copy of its weights (BF16 values, E4M3 codes and block scales), its
    /// attention scales and its recipe (FNV-1a over the bytes in a fixed
    /// order). Equal fingerprints on all ranks after a data-parallel step say
    /// the ranks generate alike. As slow as copying the weights.
    pub fn fingerprint(&self) -> Result<u64> {
        let mut fingerprint = 0u64;
        // SAFETY: a valid policy and out-pointer.
        check(unsafe { sys::fp8rl_policy_fingerprint(self.raw.as_ptr(), &mut fingerprint) })?;
        Ok(fingerprint)
    }

    /// Copies the master weights and attention scales of `source` into this
    /// policy and requantizes its compute copies in its own recipe (e.g. from
    /// a BF16-trained policy into an FP8 generator). Both policies must have
    /// the same model config and be distinct.
    pub fn copy_weights_from(&self, source: &Policy<'_>) -> Result<()> {
        // SAFETY: two valid policies (the library refuses the same one twice).
        check(unsafe { sys::fp8rl_policy_copy_weights(self.raw.as_ptr(), source.raw.as_ptr()) })
    }

    /// The current precision recipe.
    pub fn recipe(&self) -> Result<Recipe> {
        // SAFETY: plain C data (see c_defaults); init sets struct_size.
        let mut recipe = unsafe { crate::macros::c_defaults(sys::fp8rl_recipe_init) };
        // SAFETY: a valid policy and recipe.
        check(unsafe { sys::fp8rl_policy_get_recipe(self.raw.as_ptr(), &mut recipe) })?;
        Ok(Recipe::from_c_fields(&recipe))
    }

    /// Sets the precision recipe and requantizes the compute weights; on any
    /// error the policy keeps its previous recipe.
    pub fn set_recipe(&self, recipe: &Recipe) -> Result<()> {
        let recipe = recipe.c_fields();
        // SAFETY: a valid policy and recipe.
        check(unsafe { sys::fp8rl_policy_set_recipe(self.raw.as_ptr(), &recipe) })
    }

    /// Destroys the policy and reports the library's status (dropping it
    /// does the same and ignores the status). Its rollouts stay valid.
    pub fn close(self) -> Result<()> {
        let this = std::mem::ManuallyDrop::new(self);
        // SAFETY: we own the policy; no trainer borrows it; ManuallyDrop keeps
        // Drop from destroying it again.
        check(unsafe { sys::fp8rl_policy_destroy(this.raw.as_ptr()) })
    }

    pub(crate) fn as_ptr(&self) -> *mut sys::fp8rl_policy {
        self.raw.as_ptr()
    }
}

impl Drop for Policy<'_> {
    fn drop(&mut self) {
        // SAFETY: we own the policy, and no trainer borrows it any more, so
        // the library cannot refuse.
        unsafe { sys::fp8rl_policy_destroy(self.raw.as_ptr()) };
    }
}

impl std::fmt::Debug for Policy<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Policy").field("raw", &self.raw).finish_non_exhaustive()
    }
}
