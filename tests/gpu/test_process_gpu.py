"""On the GPU, too, nothing a command started runs after it returns (conftest.ProcessMark):
the CUDA context and the backend's threads end with the command's process."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.gpu

ALIGNED_A = b">a\nMKVLAAGIVG\n>b\nMKVL--GIVG\n"
ALIGNED_B = b">c\nMKLAAGIV--\n>d\nMRVLAAGLVG\n"
COMMANDS = {
    "align": ["align", "x.fa", "-o", "out.fa", "-q", "--device", "cuda"],
    "auto": ["align", "x.fa", "-o", "out.fa", "-q"],
    "add": ["add", "A.fa", "new.fa", "-o", "out.fa", "-q", "--device", "cuda"],
    "merge": ["merge", "A.fa", "B.fa", "-o", "out.fa", "-q", "--device", "cuda"],
    "tree": ["tree", "x.fa", "-o", "out.nwk", "-q", "--device", "cuda"],
}


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_no_process_outlives_a_gpu_command(tmp_path: Path, command: str, process_mark) -> None:
    (tmp_path / "x.fa").write_bytes(b">a\nMKVLAAGIVG\n>b\nMKVLGIVG\n>c\nMKLAAGIV\n>d\nMRVLAAGLVG\n")
    (tmp_path / "A.fa").write_bytes(ALIGNED_A)
    (tmp_path / "B.fa").write_bytes(ALIGNED_B)
    (tmp_path / "new.fa").write_bytes(b">e\nMKVLAAGIVGG\n")
    for _ in range(2):  # a second run could find anything the first left to serve it
        result = subprocess.run([sys.executable, "-m", "msa", *COMMANDS[command]], cwd=tmp_path,
                                env=process_mark.env(), capture_output=True, timeout=600)
        assert result.returncode == 0, result.stderr.decode()
        assert process_mark.processes() == [], f"left running after msa {command} on the GPU"
