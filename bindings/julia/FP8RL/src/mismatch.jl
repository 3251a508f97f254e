# How far the generator's log-probs are from the training policy's recomputation of the same tokens.

"""
    mismatch_metrics(logp_old, logp_gen; importance = ImportanceOptions()) -> NamedTuple
    mismatch_metrics(logp_old, logp_gen, offsets; importance = ImportanceOptions()) -> NamedTuple

The mismatch between log-probs the training policy recomputed (`logp_old`,
e.g. from [`score`](@ref) or [`recompute_logprobs`](@ref); finite) and those
the generator recorded (`logp_gen`; non-finite ones are counted and left out),
with importance weights formed per `importance` (`fp8rl_mismatch_metrics_compute`).
Give one vector per sequence, or flat vectors with C-style `offsets` (`n + 1`
of them, 0 first: sequence i is `offsets[i] + 1 : offsets[i + 1]`).

Returns `tokens`, `non_finite_tokens`, `token_mult_prob_error` (mean
exp(|logp_old - logp_gen|), 1 when identical), `gen_kl_error` and
`gen_kl_k1` (k3 and k1 estimates of KL(gen ‖ train)), `policy_kl_error`
(k3 of KL(train ‖ gen)), `is_weight_mean`, `is_truncated_fraction`,
`is_masked_fraction` and `is_masked_sequences`.
"""
function mismatch_metrics(logp_old::AbstractVector{<:Real}, logp_gen::AbstractVector{<:Real},
                          offsets::AbstractVector{<:Integer}; importance::ImportanceOptions = ImportanceOptions())
    total = length(logp_old)
    if length(logp_gen) != total
        throw(_invalid("mismatch_metrics: logp_old has $total values, logp_gen $(length(logp_gen))"))
    end
    sequence_offsets = _offsets(offsets, total, "mismatch_metrics: offsets")
    old = _float_vector(logp_old, total, "mismatch_metrics: logp_old")
    gen = _float_vector(logp_gen, total, "mismatch_metrics: logp_gen"; allow_non_finite = true)
    metrics = Ref(_c_defaults(L.fp8rl_mismatch_metrics))
    check(L.fp8rl_mismatch_metrics_compute(old, gen, sequence_offsets, length(sequence_offsets) - 1,
                                           Ref(_to_c(importance)), metrics))
    return _fields(metrics[])
end

function mismatch_metrics(logp_old::AbstractVector{<:AbstractVector}, logp_gen::AbstractVector{<:AbstractVector};
                          importance::ImportanceOptions = ImportanceOptions())
    isempty(logp_old) && throw(_invalid("mismatch_metrics: no sequences"))
    if length(logp_gen) != length(logp_old)
        throw(_invalid("mismatch_metrics: $(length(logp_old)) sequences in logp_old, $(length(logp_gen)) in logp_gen"))
    end
    for (i, (old, gen)) in enumerate(zip(logp_old, logp_gen))
        if length(old) != length(gen)
            throw(_invalid("mismatch_metrics: sequence $i has $(length(old)) values in logp_old, $(length(gen)) in logp_gen"))
        end
    end
    offsets = _offsets_of(length(old) for old in logp_old)
    flat_old = reduce(vcat, logp_old)
    flat_gen = reduce(vcat, logp_gen)
    return mismatch_metrics(flat_old, flat_gen, offsets; importance = importance)
end
