//! The bindings' layouts against NVIDIA's headers: asserted at compile time, and printed for
//! `tests/nvcuvid_layout.rs` to diff against the C program compiled with those headers.

use super::*;
use std::ffi::{c_long, c_ulong};
use std::mem::{offset_of, size_of};

// Layouts, from tests/c/nvcuvid_layout.c compiled against /usr/include/ffnvcodec: x86-64 Linux
// (LP64, `unsigned long` is 8 bytes) and Windows x64 (LLP64, 4 bytes; x86_64-w64-mingw32-gcc, run
// under Wine). Only the structs with `unsigned long` fields differ: `lp64(linux, windows)`.
const fn lp64(linux: usize, windows: usize) -> usize {
    if cfg!(windows) {
        windows
    } else {
        linux
    }
}
const _: () = assert!(size_of::<c_ulong>() == lp64(8, 4) && size_of::<c_long>() == lp64(8, 4));
const _: () = assert!(size_of::<CUVIDDECODECAPS>() == 88);
const _: () = assert!(offset_of!(CUVIDDECODECAPS, bIsSupported) == 24);
const _: () = assert!(offset_of!(CUVIDDECODECAPS, nMaxWidth) == 28);
const _: () = assert!(offset_of!(CUVIDDECODECAPS, nMinWidth) == 40);
const _: () = assert!(offset_of!(CUVIDDECODECAPS, bIsHistogramSupported) == 44);
const _: () = assert!(offset_of!(CUVIDDECODECAPS, reserved3) == 48);
const _: () = assert!(size_of::<CUVIDDECODECREATEINFO>() == lp64(176, 112));
const _: () = assert!(offset_of!(CUVIDDECODECREATEINFO, CodecType) == lp64(24, 12));
const _: () = assert!(offset_of!(CUVIDDECODECREATEINFO, ulCreationFlags) == lp64(32, 20));
const _: () = assert!(offset_of!(CUVIDDECODECREATEINFO, display_area) == lp64(80, 44));
const _: () = assert!(offset_of!(CUVIDDECODECREATEINFO, OutputFormat) == lp64(88, 52));
const _: () = assert!(offset_of!(CUVIDDECODECREATEINFO, ulTargetWidth) == lp64(96, 60));
const _: () = assert!(offset_of!(CUVIDDECODECREATEINFO, vidLock) == lp64(120, 72));
const _: () = assert!(offset_of!(CUVIDDECODECREATEINFO, target_rect) == lp64(128, 80));
const _: () = assert!(offset_of!(CUVIDDECODECREATEINFO, enableHistogram) == lp64(136, 88));
const _: () = assert!(offset_of!(CUVIDDECODECREATEINFO, Reserved2) == lp64(144, 92));
const _: () = assert!(size_of::<CUVIDEOFORMAT>() == 64);
const _: () = assert!(offset_of!(CUVIDEOFORMAT, frame_rate) == 4);
const _: () = assert!(offset_of!(CUVIDEOFORMAT, progressive_sequence) == 12);
const _: () = assert!(offset_of!(CUVIDEOFORMAT, min_num_decode_surfaces) == 15);
const _: () = assert!(offset_of!(CUVIDEOFORMAT, coded_width) == 16);
const _: () = assert!(offset_of!(CUVIDEOFORMAT, display_area) == 24);
const _: () = assert!(offset_of!(CUVIDEOFORMAT, chroma_format) == 40);
const _: () = assert!(offset_of!(CUVIDEOFORMAT, display_aspect_ratio) == 48);
const _: () = assert!(offset_of!(CUVIDEOFORMAT, video_signal_description) == 56);
const _: () = assert!(offset_of!(CUVIDEOFORMAT, seqhdr_data_length) == 60);
const _: () = assert!(size_of::<CUVIDPARSERDISPINFO>() == 24);
const _: () = assert!(offset_of!(CUVIDPARSERDISPINFO, timestamp) == 16);
const _: () = assert!(size_of::<CUVIDSOURCEDATAPACKET>() == lp64(32, 24));
const _: () = assert!(offset_of!(CUVIDSOURCEDATAPACKET, payload) == lp64(16, 8));
const _: () = assert!(offset_of!(CUVIDSOURCEDATAPACKET, timestamp) == lp64(24, 16));
const _: () = assert!(size_of::<CUVIDPARSERPARAMS>() == 136);
const _: () = assert!(offset_of!(CUVIDPARSERPARAMS, ulMaxDisplayDelay) == 16);
const _: () = assert!(offset_of!(CUVIDPARSERPARAMS, uReserved1) == 24);
const _: () = assert!(offset_of!(CUVIDPARSERPARAMS, pUserData) == 40);
const _: () = assert!(offset_of!(CUVIDPARSERPARAMS, pfnSequenceCallback) == 48);
const _: () = assert!(offset_of!(CUVIDPARSERPARAMS, pfnGetOperatingPoint) == 72);
const _: () = assert!(offset_of!(CUVIDPARSERPARAMS, pvReserved2) == 80);
const _: () = assert!(offset_of!(CUVIDPARSERPARAMS, pExtVideoInfo) == 128);
const _: () = assert!(size_of::<CUVIDPROCPARAMS>() == 264);
const _: () = assert!(offset_of!(CUVIDPROCPARAMS, raw_input_dptr) == 24);
const _: () = assert!(offset_of!(CUVIDPROCPARAMS, raw_output_dptr) == 40);
const _: () = assert!(offset_of!(CUVIDPROCPARAMS, output_stream) == 56);
const _: () = assert!(offset_of!(CUVIDPROCPARAMS, Reserved) == 64);
const _: () = assert!(offset_of!(CUVIDPROCPARAMS, histogram_dptr) == 248);
const _: () = assert!(offset_of!(CUVIDPROCPARAMS, Reserved2) == 256);
const _: () = assert!(size_of::<CUVIDGETDECODESTATUS>() == 192);
const _: () = assert!(offset_of!(CUVIDGETDECODESTATUS, pReserved) == 128);
const _: () = assert!(size_of::<CUVIDRECONFIGUREDECODERINFO>() == 128);
const _: () = assert!(offset_of!(CUVIDRECONFIGUREDECODERINFO, ulNumDecodeSurfaces) == 16);
const _: () = assert!(offset_of!(CUVIDRECONFIGUREDECODERINFO, display_area) == 68);
const _: () = assert!(offset_of!(CUVIDRECONFIGUREDECODERINFO, target_rect) == 76);
const _: () = assert!(offset_of!(CUVIDRECONFIGUREDECODERINFO, reserved2) == 84);
const _: () = assert!(size_of::<CUVIDPICPARAMS>() == 4280);
const _: () = assert!(offset_of!(CUVIDPICPARAMS, CurrPicIdx) == 8);
const _: () = assert!(offset_of!(CUVIDPICPARAMS, nBitstreamDataLen) == 24);
const _: () = assert!(offset_of!(CUVIDPICPARAMS, pBitstreamData) == 32);
const _: () = assert!(offset_of!(CUVIDPICPARAMS, nNumSlices) == 40);
const _: () = assert!(offset_of!(CUVIDPICPARAMS, pSliceDataOffsets) == 48);
const _: () = assert!(offset_of!(CUVIDPICPARAMS, ref_pic_flag) == 56);
const _: () = assert!(offset_of!(CUVIDPICPARAMS, intra_pic_flag) == 60);
const _: () = assert!(offset_of!(CUVIDPICPARAMS, Reserved) == 64);
const _: () = assert!(offset_of!(CUVIDPICPARAMS, CodecSpecific) == 184);

/// The same numbers as text, one `name value` a line, in the order the C program prints them, so
/// `tests/nvcuvid_layout.rs` can diff the two.
pub fn layout_report() -> String {
    let mut s = String::new();
    let mut p = |k: &str, v: usize| {
        s.push_str(k);
        s.push(' ');
        s.push_str(&v.to_string());
        s.push('\n');
    };
    p("CUVIDDECODECAPS", size_of::<CUVIDDECODECAPS>());
    p("CUVIDDECODECAPS.bIsSupported", offset_of!(CUVIDDECODECAPS, bIsSupported));
    p("CUVIDDECODECAPS.nMaxWidth", offset_of!(CUVIDDECODECAPS, nMaxWidth));
    p("CUVIDDECODECAPS.nMinWidth", offset_of!(CUVIDDECODECAPS, nMinWidth));
    p("CUVIDDECODECAPS.bIsHistogramSupported", offset_of!(CUVIDDECODECAPS, bIsHistogramSupported));
    p("CUVIDDECODECAPS.reserved3", offset_of!(CUVIDDECODECAPS, reserved3));
    p("CUVIDDECODECREATEINFO", size_of::<CUVIDDECODECREATEINFO>());
    p("CUVIDDECODECREATEINFO.CodecType", offset_of!(CUVIDDECODECREATEINFO, CodecType));
    p("CUVIDDECODECREATEINFO.ulCreationFlags", offset_of!(CUVIDDECODECREATEINFO, ulCreationFlags));
    p("CUVIDDECODECREATEINFO.display_area", offset_of!(CUVIDDECODECREATEINFO, display_area));
    p("CUVIDDECODECREATEINFO.OutputFormat", offset_of!(CUVIDDECODECREATEINFO, OutputFormat));
    p("CUVIDDECODECREATEINFO.ulTargetWidth", offset_of!(CUVIDDECODECREATEINFO, ulTargetWidth));
    p("CUVIDDECODECREATEINFO.vidLock", offset_of!(CUVIDDECODECREATEINFO, vidLock));
    p("CUVIDDECODECREATEINFO.target_rect", offset_of!(CUVIDDECODECREATEINFO, target_rect));
    p("CUVIDDECODECREATEINFO.enableHistogram", offset_of!(CUVIDDECODECREATEINFO, enableHistogram));
    p("CUVIDDECODECREATEINFO.Reserved2", offset_of!(CUVIDDECODECREATEINFO, Reserved2));
    p("CUVIDEOFORMAT", size_of::<CUVIDEOFORMAT>());
    p("CUVIDEOFORMAT.frame_rate", offset_of!(CUVIDEOFORMAT, frame_rate));
    p("CUVIDEOFORMAT.progressive_sequence", offset_of!(CUVIDEOFORMAT, progressive_sequence));
    p("CUVIDEOFORMAT.min_num_decode_surfaces", offset_of!(CUVIDEOFORMAT, min_num_decode_surfaces));
    p("CUVIDEOFORMAT.coded_width", offset_of!(CUVIDEOFORMAT, coded_width));
    p("CUVIDEOFORMAT.display_area", offset_of!(CUVIDEOFORMAT, display_area));
    p("CUVIDEOFORMAT.chroma_format", offset_of!(CUVIDEOFORMAT, chroma_format));
    p("CUVIDEOFORMAT.display_aspect_ratio", offset_of!(CUVIDEOFORMAT, display_aspect_ratio));
    p("CUVIDEOFORMAT.video_signal_description", offset_of!(CUVIDEOFORMAT, video_signal_description));
    p("CUVIDEOFORMAT.seqhdr_data_length", offset_of!(CUVIDEOFORMAT, seqhdr_data_length));
    p("CUVIDPARSERDISPINFO", size_of::<CUVIDPARSERDISPINFO>());
    p("CUVIDPARSERDISPINFO.timestamp", offset_of!(CUVIDPARSERDISPINFO, timestamp));
    p("CUVIDSOURCEDATAPACKET", size_of::<CUVIDSOURCEDATAPACKET>());
    p("CUVIDSOURCEDATAPACKET.payload", offset_of!(CUVIDSOURCEDATAPACKET, payload));
    p("CUVIDSOURCEDATAPACKET.timestamp", offset_of!(CUVIDSOURCEDATAPACKET, timestamp));
    p("CUVIDPARSERPARAMS", size_of::<CUVIDPARSERPARAMS>());
    p("CUVIDPARSERPARAMS.ulMaxDisplayDelay", offset_of!(CUVIDPARSERPARAMS, ulMaxDisplayDelay));
    p("CUVIDPARSERPARAMS.uReserved1", offset_of!(CUVIDPARSERPARAMS, uReserved1));
    p("CUVIDPARSERPARAMS.pUserData", offset_of!(CUVIDPARSERPARAMS, pUserData));
    p("CUVIDPARSERPARAMS.pfnSequenceCallback", offset_of!(CUVIDPARSERPARAMS, pfnSequenceCallback));
    p("CUVIDPARSERPARAMS.pfnGetOperatingPoint", offset_of!(CUVIDPARSERPARAMS, pfnGetOperatingPoint));
    p("CUVIDPARSERPARAMS.pvReserved2", offset_of!(CUVIDPARSERPARAMS, pvReserved2));
    p("CUVIDPARSERPARAMS.pExtVideoInfo", offset_of!(CUVIDPARSERPARAMS, pExtVideoInfo));
    p("CUVIDPROCPARAMS", size_of::<CUVIDPROCPARAMS>());
    p("CUVIDPROCPARAMS.raw_input_dptr", offset_of!(CUVIDPROCPARAMS, raw_input_dptr));
    p("CUVIDPROCPARAMS.raw_output_dptr", offset_of!(CUVIDPROCPARAMS, raw_output_dptr));
    p("CUVIDPROCPARAMS.output_stream", offset_of!(CUVIDPROCPARAMS, output_stream));
    p("CUVIDPROCPARAMS.Reserved", offset_of!(CUVIDPROCPARAMS, Reserved));
    p("CUVIDPROCPARAMS.histogram_dptr", offset_of!(CUVIDPROCPARAMS, histogram_dptr));
    p("CUVIDPROCPARAMS.Reserved2", offset_of!(CUVIDPROCPARAMS, Reserved2));
    p("CUVIDGETDECODESTATUS", size_of::<CUVIDGETDECODESTATUS>());
    p("CUVIDGETDECODESTATUS.pReserved", offset_of!(CUVIDGETDECODESTATUS, pReserved));
    p("CUVIDRECONFIGUREDECODERINFO", size_of::<CUVIDRECONFIGUREDECODERINFO>());
    p("CUVIDRECONFIGUREDECODERINFO.ulNumDecodeSurfaces", offset_of!(CUVIDRECONFIGUREDECODERINFO, ulNumDecodeSurfaces));
    p("CUVIDRECONFIGUREDECODERINFO.display_area", offset_of!(CUVIDRECONFIGUREDECODERINFO, display_area));
    p("CUVIDRECONFIGUREDECODERINFO.target_rect", offset_of!(CUVIDRECONFIGUREDECODERINFO, target_rect));
    p("CUVIDRECONFIGUREDECODERINFO.reserved2", offset_of!(CUVIDRECONFIGUREDECODERINFO, reserved2));
    p("CUVIDPICPARAMS", size_of::<CUVIDPICPARAMS>());
    p("CUVIDPICPARAMS.CurrPicIdx", offset_of!(CUVIDPICPARAMS, CurrPicIdx));
    p("CUVIDPICPARAMS.nBitstreamDataLen", offset_of!(CUVIDPICPARAMS, nBitstreamDataLen));
    p("CUVIDPICPARAMS.pBitstreamData", offset_of!(CUVIDPICPARAMS, pBitstreamData));
    p("CUVIDPICPARAMS.nNumSlices", offset_of!(CUVIDPICPARAMS, nNumSlices));
    p("CUVIDPICPARAMS.pSliceDataOffsets", offset_of!(CUVIDPICPARAMS, pSliceDataOffsets));
    p("CUVIDPICPARAMS.ref_pic_flag", offset_of!(CUVIDPICPARAMS, ref_pic_flag));
    p("CUVIDPICPARAMS.intra_pic_flag", offset_of!(CUVIDPICPARAMS, intra_pic_flag));
    p("CUVIDPICPARAMS.Reserved", offset_of!(CUVIDPICPARAMS, Reserved));
    p("CUVIDPICPARAMS.CodecSpecific", offset_of!(CUVIDPICPARAMS, CodecSpecific));
    s
}
