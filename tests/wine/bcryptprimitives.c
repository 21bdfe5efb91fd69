/* Wine 8.0 (Debian 12's wine64) has no bcryptprimitives.dll, and Rust's standard library (1.78 and
 * later) imports ProcessPrng from it for its random numbers (HashMap keys). Windows 10 and later
 * ship that DLL; this stand-in exists only on the Wine test path (scripts/ci/wine-run.sh builds it
 * into target/wine-shims/) and is never packaged. It fills the buffer from BCryptGenRandom, which
 * Wine implements. */
#include <windows.h>
#include <bcrypt.h>

__declspec(dllexport) BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T len) {
    while (len > 0) {
        ULONG n = len > 0x40000000u ? 0x40000000u : (ULONG)len;
        if (BCryptGenRandom(NULL, data, n, BCRYPT_USE_SYSTEM_PREFERRED_RNG) != 0) return FALSE;
        data += n;
        len -= n;
    }
    return TRUE;
}
