"""Wheel build hook: compile msa's Numba functions into the wheel, as ``msa/_jitcache``.

``pip install .`` builds the wheel on the machine it installs on, so the
compiled code matches its CPU, Numba and Python, and the first ``msa align``
loads it instead of compiling (see msa/jit.py and msa/_runtime/precompile.py). An
editable install gets nothing here: it compiles on first use, as before.
``HATCH_BUILD_NO_HOOKS=true`` builds a plain pure-Python wheel without it. The
compile goes through msa's jit hooks, so it fails where they are off
(``MSA_JIT_HOOKS=0``, or a Numba outside the tested range that pyproject.toml pins).
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface


class PrecompileHook(BuildHookInterface):
    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        self._tmp: str | None = None
        if self.target_name != "wheel" or version == "editable":
            return
        self._tmp = tempfile.mkdtemp(prefix="msa-jitcache-")
        folder = Path(self._tmp) / "_jitcache"
        env = dict(os.environ)
        # The package from this source tree; no .pyc files written into it.
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [self.root, env.get("PYTHONPATH")]))
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        self.app.display_info("msa: compiling the Numba functions into the wheel (msa/_jitcache) ...")
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "msa._runtime.precompile", str(folder)], cwd=self._tmp, env=env, check=True)
        self.app.display_info(f"msa: compiled in {time.perf_counter() - start:.0f} s")
        build_data["force_include"][str(folder)] = "msa/_jitcache"
        # Compiled for this Python and platform (and CPU): not a py3-none-any wheel.
        build_data["pure_python"] = False
        build_data["infer_tag"] = True

    def finalize(self, version: str, build_data: dict[str, Any], artifact_path: str) -> None:
        if self._tmp is not None:
            shutil.rmtree(self._tmp, ignore_errors=True)
