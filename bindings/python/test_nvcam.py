"""Tests of the ctypes binding against the real library (stdlib unittest only), by topic in
test_nvcam_library.py, test_nvcam_frames.py, test_nvcam_convert.py and test_nvcam_record.py
(what they share: nvcam_testcase.py). This file runs them all:

    NVCAM_LIB=target/release/libnvcam.so python3 bindings/python/test_nvcam.py

`cargo test --test bindings` runs this with NVCAM_LIB pointing at the cdylib it just built; pytest
(`pytest bindings/python`) collects the same tests from the topic files.
Every camera here is the built-in test pattern on the CPU, so no network and no GPU are needed.
"""

import os
import sys
import unittest

if __name__ == "__main__":
    here = os.path.dirname(os.path.abspath(__file__))
    suite = unittest.defaultTestLoader.discover(here, pattern="test_nvcam_*.py", top_level_dir=here)
    sys.exit(0 if unittest.TextTestRunner(verbosity=2).run(suite).wasSuccessful() else 1)
