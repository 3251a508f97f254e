# The library's log messages, forwarded to Julia's logging (@debug, @info,
# @warn, @error from module FP8RL).
#
# The C callback runs inside an fp8rl call, while that call holds its
# context's lock. Julia logging does I/O, which may yield to another task
# (one that calls into the same context: a deadlock) or move this task to
# another thread (the C call would resume on the wrong one). So the callback
# only queues the message on the current task; `check`, which runs right
# after every call, hands the queue to the logger. A message is therefore
# logged when the call that produced it returns.

# The C function pointer every context logs through (made in __init__).
const _LOG_CALLBACK = Ref{Ptr{Cvoid}}(C_NULL)

# Callbacks running right now, on any thread: finalizers must not call fp8rl
# from inside one (they would re-enter the library during a call; see handles.jl).
const _IN_CALLBACK = Threads.Atomic{Int}(0)

const _LOG_KEY = :FP8RL_pending_log_messages

function _log_callback(level::Cint, message::Ptr{UInt8}, ::Ptr{Cvoid})::Cvoid
    Threads.atomic_add!(_IN_CALLBACK, 1)
    try
        text = message == C_NULL ? "" : unsafe_string(message)
        pending = get!(Vector{Tuple{Cint,String}}, task_local_storage(), _LOG_KEY)
        push!(pending, (level, text))
    catch
        # Nothing may unwind into C: a lost log line is the lesser harm.
    finally
        Threads.atomic_sub!(_IN_CALLBACK, 1)
    end
    return nothing
end

# Logs what the library queued on this task (called after every checked call).
function _flush_log()
    pending = get(task_local_storage(), _LOG_KEY, nothing)
    (pending === nothing || isempty(pending)) && return nothing
    messages = copy(pending)
    empty!(pending)
    for (level, text) in messages
        if level <= L.FP8RL_LOG_DEBUG
            @debug text
        elseif level == L.FP8RL_LOG_INFO
            @info text
        elseif level == L.FP8RL_LOG_WARNING
            @warn text
        else
            @error text
        end
    end
    return nothing
end
