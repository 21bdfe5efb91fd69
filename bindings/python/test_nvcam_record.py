"""Event recording through the binding: a clip from a camera's packet cache, its status, and its
handle's lifetime. Run by test_nvcam.py with the other test_nvcam_*.py."""

import os
import shutil
import subprocess
import tempfile
import time
import unittest

from nvcam_testcase import NvcamTestCase, nvcam, open_cam


class RecordTest(NvcamTestCase):
    """`Camera.record` and the `Recording` it returns."""

    def test_record_an_event_clip(self):
        if shutil.which("ffmpeg") is None:
            self.skipTest("no ffmpeg CLI to make an H.264 clip")
        d = tempfile.mkdtemp(prefix="nvcam-rec-")
        src = os.path.join(d, "src.mp4")
        subprocess.run(["ffmpeg", "-hide_banner", "-loglevel", "error", "-f", "lavfi", "-i", "testsrc2=size=160x120:rate=30",
                        "-frames:v", "60", "-pix_fmt", "yuv420p", "-c:v", "libx264", "-g", "15", src], check=True)
        with open_cam(src, flags=nvcam.OPEN_LOSSLESS | nvcam.OPEN_NO_PACING) as cam:
            cam.record_cache(2000)
            for _ in range(20):
                cam.get_frame(3000).release()
            self.assertNvcamError(nvcam.E_INVALID_ARGUMENT, cam.record, os.path.join(d, "x.avi"), 0, 100)
            with cam.record(os.path.join(d, "clip.mkv"), pre_ms=500, post_ms=300) as rec:
                self.assertEqual(rec.status()["state_name"], "running")
                deadline = time.monotonic() + 10
                while not rec.ended() and time.monotonic() < deadline:
                    f = cam.try_get_frame(100)
                    if f is not None:
                        f.release()
                st = rec.status()
                self.assertEqual(st["state_name"], "done", st["error_text"])
                self.assertTrue(st["file"].endswith("clip.mkv") and os.path.exists(st["file"]), st)
                self.assertGreater(st["frames"], 15)
                self.assertEqual(st["last_seq"] - st["first_seq"] + 1, st["frames"])
                self.assertGreaterEqual(cam.record_stats()["recordings"], 1)
            self.assertNvcamError(nvcam.E_STALE_HANDLE, rec.release)
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    unittest.main()
