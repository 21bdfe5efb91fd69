/*
 * Another FFmpeg's avformat-59.dll, as a host process may have loaded it before nvcam.dll (an
 * application's own FFmpeg, a Python package's): a DLL of that name exporting two of libavformat's
 * functions, which answer as the host's. scripts/ci/windows-test.sh builds it with mingw-w64 and
 * tests/wine/plain_load.c --host-ffmpeg loads it first: nvcam must run on its own
 * avformat_nvcam-59.dll beside it, and this one must stay the host's.
 */
__declspec(dllexport) unsigned avformat_version(void) { return (59u << 16) | (27u << 8) | 100u; }
__declspec(dllexport) const char *avformat_configuration(void) { return "the host's own avformat"; }
