#!/usr/bin/env python3
"""Developer build of flow-core's extension, in place: configures once, rebuilds incrementally with ninja,
and copies _C and libflow_core.so into src/oneflow so that `PYTHONPATH=packages/flow-core/src` imports them.
Builds are serialised with a lock so that several shells can call this at once.

    python dev/build.py [--build-dir DIR]
"""
import argparse
import fcntl
import glob
import os
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORE = os.path.join(ROOT, "packages", "flow-core")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build-dir", default=os.path.join(CORE, "build", "dev"))
    args = ap.parse_args()
    os.makedirs(args.build_dir, exist_ok=True)
    with open(os.path.join(args.build_dir, ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not os.path.exists(os.path.join(args.build_dir, "CMakeCache.txt")):
            subprocess.check_call(["cmake", "-S", CORE, "-B", args.build_dir, "-G", "Ninja",
                                   f"-DPython_EXECUTABLE={sys.executable}"])
        subprocess.check_call(["cmake", "--build", args.build_dir])
        # headers for C++ plugins built against this build (oneflow.sysconfig.get_include() looks here)
        inc = os.path.join(args.build_dir, "include")
        os.makedirs(inc, exist_ok=True)
        link = os.path.join(inc, "oneflow")
        if not os.path.lexists(link):
            os.symlink(os.path.join(CORE, "csrc"), link)
        # the binding module and the core library it links (found beside it through $ORIGIN)
        built = [*glob.glob(os.path.join(args.build_dir, "_C*.so")),
                 *glob.glob(os.path.join(args.build_dir, "libflow_core.so"))]
        for so in built:
            dst = os.path.join(CORE, "src", "oneflow", os.path.basename(so))
            tmp = dst + ".tmp"
            shutil.copy2(so, tmp)
            os.replace(tmp, dst)


if __name__ == "__main__":
    main()
