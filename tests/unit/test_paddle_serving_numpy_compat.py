"""numpy 1 spellings given back for Paddle Serving scripts (serving/paddle_serving/numpy_compat.py), checked
in a child process: giving them back changes numpy for the whole process."""

import subprocess
import sys
import textwrap

import numpy as np
import pytest

pytestmark = pytest.mark.unit

CHECK = textwrap.dedent(
    """
    import numpy as np
    from serving.paddle_serving.numpy_compat import give_back_numpy_1_spellings

    first = give_back_numpy_1_spellings()
    assert give_back_numpy_1_spellings() == []  # once per process
    data = bytes([1, 2, 255])
    array = np.fromstring(data, np.uint8)
    assert array.tolist() == [1, 2, 255] and array.flags.writeable  # numpy 1's copy
    assert np.fromstring(b"\\x00\\x00\\x80\\x3f", dtype=np.float32, count=1).tolist() == [1.0]
    assert np.fromstring("1 2 3", dtype=int, sep=" ").tolist() == [1, 2, 3]  # text mode: numpy's own
    assert np.float is float and np.int is int and np.object is object and np.str is str
    assert np.array([1.5]).astype(np.float).dtype == np.float64
    print(first)
    """
)


@pytest.mark.skipif(np.__version__.startswith("1."), reason="numpy 1 has them")
def test_fromstring_on_bytes_and_the_builtin_aliases_work_as_in_numpy_1():
    out = subprocess.run([sys.executable, "-c", CHECK], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "np.fromstring on bytes" in out.stdout and "np.float" in out.stdout
