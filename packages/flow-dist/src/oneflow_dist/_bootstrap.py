"""Runs the user's script (or ``-m module``) inside a rank as ``python`` would, but an uncaught exception prints
its traceback with every line prefixed by ``[rank R]: `` and ends the process at once (no MPI_Finalize, which
could wait for ranks that are stuck in a collective with this one), so that the launcher stops the job."""
import os
import runpy
import sys
import traceback


def _user_traceback(exc):
    # drop the frames of this bootstrap and of runpy: the traceback starts at the user's code
    tb = exc.__traceback__
    own = (os.path.abspath(__file__), os.path.abspath(runpy.__file__))
    while tb is not None and (os.path.abspath(tb.tb_frame.f_code.co_filename) in own
                              or tb.tb_frame.f_code.co_filename.startswith("<frozen runpy")):
        tb = tb.tb_next
    return "".join(traceback.format_exception(type(exc), exc, tb))


def _exit_code(exc):
    code = exc.code
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)  # sys.exit("message"), as Python does
    return 1


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    rank = os.environ.get("RANK", "?")
    # Line buffering: each line leaves in one write as soon as it is complete, so a rank killed by a signal loses
    # nothing it printed, and the ranks' lines, merged by hydra, do not interleave mid-line (unbuffered output
    # would write a print's text and its newline separately).
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.reconfigure(line_buffering=True, write_through=False)
        except (AttributeError, ValueError):
            pass
    try:
        if argv[0] == "-m":
            sys.argv = argv[1:]
            sys.path.insert(0, os.getcwd())
            runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
        else:
            sys.argv = list(argv)
            sys.path[0] = os.path.dirname(os.path.abspath(argv[0]))
            runpy.run_path(argv[0], run_name="__main__")
    except SystemExit as e:
        code = _exit_code(e)
        if code:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)
        return 0
    except BaseException as e:  # KeyboardInterrupt included: it is how Ctrl-C reaches a rank
        text = _user_traceback(e)
        prefix = f"[rank {rank}]: "
        sys.stderr.write("".join(prefix + line + "\n" for line in text.rstrip("\n").split("\n")))
        try:
            sys.stdout.flush()
        except Exception:
            pass
        sys.stderr.flush()
        os._exit(130 if isinstance(e, KeyboardInterrupt) else 1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
