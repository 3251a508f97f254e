# Versions and build features: what was loaded, and what it can do.

"""
    FP8RL.HEADER_VERSION

The version of the header `LibFP8RL.jl` was generated from; [`version`](@ref)
must have its major and at least its minor number.
"""
const HEADER_VERSION = VersionNumber(L.FP8RL_VERSION_MAJOR, L.FP8RL_VERSION_MINOR, L.FP8RL_VERSION_PATCH)

"""
    version() -> VersionNumber

The version of the loaded library (`fp8rl_version`).
"""
function version()
    code = L.fp8rl_version()  # major * 10000 + minor * 100 + patch
    return VersionNumber(code ÷ 10000, code ÷ 100 % 100, code % 100)
end

"""
    version_string() -> String

The version of the loaded library as `"major.minor.patch"` (`fp8rl_version_string`).
"""
version_string() = unsafe_string(L.fp8rl_version_string())

"""
    build_features() -> (cuda = Bool, avx2 = Bool, avx512 = Bool, bits = UInt32)

Which optional features this build and this machine offer
(`fp8rl_build_features`): the CUDA backend is compiled in, this CPU runs the
AVX2 or the AVX-512 kernels. `bits` is the raw `fp8rl_feature` mask.
"""
function build_features()
    bits = Ref{UInt32}(0)
    check(L.fp8rl_build_features(bits))
    mask = bits[]
    has(feature) = (mask & UInt32(feature)) != 0
    return (cuda = has(L.FP8RL_FEATURE_CUDA), avx2 = has(L.FP8RL_FEATURE_AVX2),
            avx512 = has(L.FP8RL_FEATURE_AVX512), bits = mask)
end

# A library of another major version, or an older minor one, lacks functions
# or structs these wrappers were generated for: refuse it when the package loads.
function _check_library_version()
    loaded = version()
    if loaded.major != HEADER_VERSION.major || loaded.minor < HEADER_VERSION.minor
        path = Libdl.dlpath(L._library[])
        error("FP8RL: $path is version $loaded, but this package needs $(HEADER_VERSION.major)." *
              "$(HEADER_VERSION.minor).x or a later $(HEADER_VERSION.major).y (it was generated from $HEADER_VERSION)")
    end
    return nothing
end
