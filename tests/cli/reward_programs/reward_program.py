"""A reward program for the cmd: reward's tests: `reward_program.py MODE`.

It speaks the protocol (one JSON request line in, one {"reward": x} line out)
correctly for a while, then misbehaves as MODE says, so each test can check
the error and that no process is left behind.
"""
import json
import os
import signal
import sys
import time

MODE = sys.argv[1]


def reply(value):
    sys.stdout.write(json.dumps({"reward": value}) + "\n")
    sys.stdout.flush()


def misbehave(count):
    """Called with the 1-based number of the request; returns True when handled."""
    if MODE == "crash" and count == 3:
        sys.stderr.write("reward_program: crashing on purpose\n")
        sys.stderr.flush()
        sys.exit(3)
    if MODE == "segfault" and count == 2:
        os.kill(os.getpid(), signal.SIGSEGV)
    if MODE == "hang":
        time.sleep(600)
    if MODE == "garbage":
        print("this is not json", flush=True)
        return True
    if MODE == "no_reward":
        print(json.dumps({"score": 1}), flush=True)
        return True
    if MODE == "text_reward":
        print(json.dumps({"reward": "1"}), flush=True)
        return True
    if MODE == "infinite":
        print('{"reward": 1e999}', flush=True)
        return True
    if MODE == "huge_line":
        sys.stdout.write("x" * (8 << 20))  # 8 MiB, then the newline that would end it
        sys.stdout.write("\n")
        sys.stdout.flush()
        return True
    if MODE == "two_lines" and count == 1:
        reply(1.0)
        reply(1.0)
        return True
    if MODE == "grandchild":
        # A child that inherits our stdout and outlives us unless killed.
        if os.fork() == 0:
            time.sleep(600)
            os._exit(0)
        time.sleep(600)
    return False


def main():
    if MODE == "silent_exit":
        sys.exit(0)  # never reads a request
    for count, line in enumerate(sys.stdin, start=1):
        request = json.loads(line)
        if misbehave(count):
            continue
        if MODE == "length":
            reply(len(request["completion"]))
        else:
            reply(1.0 if request["completion"].strip() == request["answer"].strip() else 0.0)


main()
