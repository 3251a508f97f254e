//! Model configurations: the architecture of a policy, as a Hugging Face
//! `config.json` describes it.

use fp8rl_sys as sys;

use crate::enums::{ModelFamily, RopeScaling};
use crate::error::{check, Error, Result};

/// The most EOS tokens a [`ModelConfig`] holds (`FP8RL_MAX_EOS_TOKEN_IDS`).
pub const MAX_EOS_TOKEN_IDS: usize = sys::FP8RL_MAX_EOS_TOKEN_IDS as usize;

/// The most dense layers a [`ModelConfig`] lists (`FP8RL_MAX_MLP_ONLY_LAYERS`).
pub const MAX_MLP_ONLY_LAYERS: usize = sys::FP8RL_MAX_MLP_ONLY_LAYERS as usize;

c_options! {
    /// The architecture of a model (`fp8rl_model_config`). Start from the
    /// defaults and set the sizes; the library validates the whole.
    ///
    /// ```
    /// use fp8rl::ModelConfig;
    /// let config = ModelConfig::new()
    ///     .vocab_size(32)
    ///     .hidden_size(64)
    ///     .num_layers(2)
    ///     .num_attention_heads(4)
    ///     .num_key_value_heads(2)
    ///     .intermediate_size(128)
    ///     .max_position_embeddings(32);
    /// assert_eq!(config.rope_theta, 10000.0);
    /// ```
    pub struct ModelConfig: sys::fp8rl_model_config = sys::fp8rl_model_config_init {
        /// Default [`ModelFamily::Llama`].
        family: ModelFamily,
        /// Vocabulary size (> 0).
        vocab_size: i64,
        /// Model width (> 0).
        hidden_size: i64,
        /// Transformer blocks (`num_hidden_layers`, > 0).
        num_layers: i64,
        /// Query heads (> 0).
        num_attention_heads: i64,
        /// Key/value heads (> 0, divides num_attention_heads).
        num_key_value_heads: i64,
        /// Per-head width; 0 (default) = hidden_size / num_attention_heads, which must then divide exactly.
        head_dim: i64,
        /// SwiGLU width (> 0).
        intermediate_size: i64,
        /// Positions the model supports (> 0); bounds prompt lengths.
        max_position_embeddings: i64,
        /// RMSNorm epsilon; default 1e-5.
        rms_norm_eps: f64,
        /// RoPE base; default 10000.
        rope_theta: f64,
        /// Default [`RopeScaling::None`].
        rope_scaling: RopeScaling,
        /// Llama-3 scaling: the factor long wavelengths are divided by (default 1).
        rope_factor: f64,
        /// Llama-3 scaling: low_freq_factor (default 1).
        rope_low_freq_factor: f64,
        /// Llama-3 scaling: high_freq_factor (default 4; must exceed the low one).
        rope_high_freq_factor: f64,
        /// Llama-3 scaling: the context length of pre-training (default 0).
        rope_original_max_position_embeddings: i64,
        /// The LM head shares the embedding matrix.
        tie_word_embeddings: bool,
        /// Bias on q/k/v (and o, except for Qwen2); Qwen2 requires it.
        attention_bias: bool,
        /// q/k head RMSNorm; required by Qwen3, refused by the others.
        qk_norm: bool,
        /// Beginning-of-sequence token, or -1 (default) for none.
        bos_token_id: i64,
        /// Mixture-of-Experts ([`ModelFamily::Qwen3Moe`] only; 0 for the other families): the experts
        /// of a sparse layer, each a SwiGLU MLP of width moe_intermediate_size (default 0).
        num_experts: i64,
        /// Experts each token goes to (top-k), in [1, num_experts] (default 0).
        num_experts_per_tok: i64,
        /// Width of each expert (default 0).
        moe_intermediate_size: i64,
        /// The chosen experts' router weights are renormalized to sum 1.
        norm_topk_prob: bool,
        /// Layer i is sparse when it is not in mlp_only_layers and (i + 1) % decoder_sparse_step == 0
        /// (default 1); other layers have the dense MLP of intermediate_size.
        decoder_sparse_step: i64,
        /// The file's load-balancing coefficient, kept with the model (default 0.001).
        router_aux_loss_coef: f64,
    }
    by_hand {
        /// End-of-sequence tokens, at most [`MAX_EOS_TOKEN_IDS`]; default none.
        eos_token_ids: Vec<i64>,
        /// Layers that keep the dense MLP, at most [`MAX_MLP_ONLY_LAYERS`]; default none.
        mlp_only_layers: Vec<i32>,
    }
}

impl ModelConfig {
    /// End-of-sequence tokens, at most [`MAX_EOS_TOKEN_IDS`] (more fail when
    /// the config is used); default none.
    ///
    /// Builder setter of the field of the same name.
    #[must_use]
    pub fn eos_token_ids(mut self, ids: &[i64]) -> Self {
        self.eos_token_ids = ids.to_vec();
        self
    }

    /// Layers that keep the dense MLP in a Qwen3-MoE model, at most
    /// [`MAX_MLP_ONLY_LAYERS`] (more fail when the config is used); default none.
    ///
    /// Builder setter of the field of the same name.
    #[must_use]
    pub fn mlp_only_layers(mut self, layers: &[i32]) -> Self {
        self.mlp_only_layers = layers.to_vec();
        self
    }

    /// Validates the configuration and counts its weights: embeddings, every
    /// layer's projections, biases and norms (a sparse layer's router and all
    /// of its experts), the final norm and (unless tied) the LM head. An
    /// invalid configuration fails with
    /// [`Status::InvalidArgument`](crate::Status::InvalidArgument) and a
    /// message naming the field.
    pub fn parameter_count(&self) -> Result<u64> {
        self.count("ModelConfig::parameter_count", sys::fp8rl_model_config_parameter_count)
    }

    /// The weights one token computes with: [`parameter_count`](Self::parameter_count)
    /// with only num_experts_per_tok experts in each sparse layer (the same
    /// count for a dense model). Fails as `parameter_count` does.
    pub fn active_parameter_count(&self) -> Result<u64> {
        self.count("ModelConfig::active_parameter_count", sys::fp8rl_model_config_active_parameter_count)
    }

    /// The number of sparse (Mixture-of-Experts) layers, by Hugging Face's
    /// Qwen3MoeDecoderLayer rule: layer i is sparse when the model has experts,
    /// i is not in mlp_only_layers and (i + 1) % decoder_sparse_step == 0.
    /// 0 for a dense model (and for a decoder_sparse_step of 0, which the
    /// library refuses).
    pub(crate) fn sparse_layer_count(&self) -> usize {
        if self.num_experts == 0 || self.decoder_sparse_step <= 0 {
            return 0;
        }
        (0..self.num_layers.max(0))
            .filter(|&layer| {
                !self.mlp_only_layers.iter().any(|&dense| i64::from(dense) == layer)
                    && (layer + 1) % self.decoder_sparse_step == 0
            })
            .count()
    }

    fn count(
        &self,
        function: &str,
        counter: unsafe extern "C" fn(*const sys::fp8rl_model_config, *mut i64) -> sys::fp8rl_status,
    ) -> Result<u64> {
        let c = self.to_c(function)?;
        let mut count = 0i64;
        // SAFETY: a valid config and out-pointer.
        check(unsafe { counter(&c, &mut count) })?;
        Ok(count as u64)
    }

    /// The C struct; fails for more EOS tokens or dense layers than it holds.
    pub(crate) fn to_c(&self, function: &str) -> Result<sys::fp8rl_model_config> {
        let mut c = self.c_fields();
        if self.eos_token_ids.len() > MAX_EOS_TOKEN_IDS {
            return Err(Error::invalid_argument(format!(
                "{function}: eos_token_ids has {} ids, at most {MAX_EOS_TOKEN_IDS} fit",
                self.eos_token_ids.len()
            )));
        }
        if self.mlp_only_layers.len() > MAX_MLP_ONLY_LAYERS {
            return Err(Error::invalid_argument(format!(
                "{function}: mlp_only_layers has {} layers, at most {MAX_MLP_ONLY_LAYERS} fit",
                self.mlp_only_layers.len()
            )));
        }
        c.eos_token_ids[..self.eos_token_ids.len()].copy_from_slice(&self.eos_token_ids);
        c.num_eos_token_ids = self.eos_token_ids.len() as i32;
        c.mlp_only_layers[..self.mlp_only_layers.len()].copy_from_slice(&self.mlp_only_layers);
        c.num_mlp_only_layers = self.mlp_only_layers.len() as i32;
        Ok(c)
    }

    pub(crate) fn from_c(c: &sys::fp8rl_model_config) -> Self {
        let mut config = Self::from_c_fields(c);
        let count = usize::try_from(c.num_eos_token_ids).unwrap_or(0).min(MAX_EOS_TOKEN_IDS);
        config.eos_token_ids = c.eos_token_ids[..count].to_vec();
        let count = usize::try_from(c.num_mlp_only_layers).unwrap_or(0).min(MAX_MLP_ONLY_LAYERS);
        config.mlp_only_layers = c.mlp_only_layers[..count].to_vec();
        config
    }
}
