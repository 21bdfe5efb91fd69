//! Declarations of NVIDIA's video decoder library, `libnvcuvid.so.1` (`nvcuvid.dll` on
//! Windows; the driver ships it), which `super::api` opens at run time and calls.
//!
//! The declarations are the subset of `cuviddec.h`/`nvcuvid.h` (NVDEC API 11.1, as shipped MIT
//! licensed by Debian's `libffmpeg-nvenc-dev` under /usr/include/ffnvcodec/) that the decoder uses,
//! written by hand. Every struct's size and the offsets the code relies on are asserted at compile
//! time against the numbers a C program compiled with those headers prints
//! (`tests/c/nvcuvid_layout.c`; `tests/nvcuvid_layout.rs` recompiles it and compares where the
//! headers are installed). Newer drivers keep these layouts: later API versions only fill
//! reserved fields.
//!
//! Return codes are kept as raw `u32` (`CUresult` values): a value the driver adds later must not
//! become an invalid Rust enum.
// The header's value sets are bound whole (unused values document what the driver may return).
#![allow(non_snake_case, non_camel_case_types, non_upper_case_globals, clippy::upper_case_acronyms, dead_code)]

use std::ffi::{c_int, c_long, c_short, c_uchar, c_uint, c_ulong, c_ushort, c_void};
use std::mem::{offset_of, size_of};

/// A `CUresult` as the driver returned it.
pub(crate) type CUresult = u32;
pub(crate) const CUDA_SUCCESS: CUresult = 0;
pub(crate) type CUcontext = *mut c_void;
pub(crate) type CUstream = *mut c_void;
pub(crate) type CUdeviceptr = u64;
pub(crate) type CUvideodecoder = *mut c_void;
pub(crate) type CUvideoparser = *mut c_void;
pub(crate) type CUvideoctxlock = *mut c_void;
pub(crate) type CUvideotimestamp = i64;

/// `cudaVideoCodec`.
pub(crate) type cudaVideoCodec = c_int;
pub(crate) const cudaVideoCodec_MPEG1: cudaVideoCodec = 0;
pub(crate) const cudaVideoCodec_MPEG2: cudaVideoCodec = 1;
pub(crate) const cudaVideoCodec_MPEG4: cudaVideoCodec = 2;
pub(crate) const cudaVideoCodec_VC1: cudaVideoCodec = 3;
pub(crate) const cudaVideoCodec_H264: cudaVideoCodec = 4;
pub(crate) const cudaVideoCodec_JPEG: cudaVideoCodec = 5;
pub(crate) const cudaVideoCodec_HEVC: cudaVideoCodec = 8;
pub(crate) const cudaVideoCodec_VP8: cudaVideoCodec = 9;
pub(crate) const cudaVideoCodec_VP9: cudaVideoCodec = 10;
pub(crate) const cudaVideoCodec_AV1: cudaVideoCodec = 11;

/// `cudaVideoChromaFormat`.
pub(crate) type cudaVideoChromaFormat = c_int;
pub(crate) const cudaVideoChromaFormat_Monochrome: cudaVideoChromaFormat = 0;
pub(crate) const cudaVideoChromaFormat_420: cudaVideoChromaFormat = 1;
pub(crate) const cudaVideoChromaFormat_422: cudaVideoChromaFormat = 2;
pub(crate) const cudaVideoChromaFormat_444: cudaVideoChromaFormat = 3;

/// `cudaVideoSurfaceFormat`.
pub(crate) type cudaVideoSurfaceFormat = c_int;
pub(crate) const cudaVideoSurfaceFormat_NV12: cudaVideoSurfaceFormat = 0;
pub(crate) const cudaVideoSurfaceFormat_P016: cudaVideoSurfaceFormat = 1;

/// `cudaVideoDeinterlaceMode`.
pub(crate) type cudaVideoDeinterlaceMode = c_int;
pub(crate) const cudaVideoDeinterlaceMode_Weave: cudaVideoDeinterlaceMode = 0;

/// `cudaVideoCreateFlags`.
pub(crate) const cudaVideoCreate_Default: c_ulong = 0;
pub(crate) const cudaVideoCreate_PreferCUVID: c_ulong = 4;

/// `cuvidDecodeStatus`.
pub(crate) type cuvidDecodeStatus = c_int;
pub(crate) const cuvidDecodeStatus_Invalid: cuvidDecodeStatus = 0;
pub(crate) const cuvidDecodeStatus_InProgress: cuvidDecodeStatus = 1;
pub(crate) const cuvidDecodeStatus_Success: cuvidDecodeStatus = 2;
pub(crate) const cuvidDecodeStatus_Error: cuvidDecodeStatus = 8;
pub(crate) const cuvidDecodeStatus_Error_Concealed: cuvidDecodeStatus = 9;

/// `CUvideopacketflags`.
pub(crate) const CUVID_PKT_ENDOFSTREAM: c_ulong = 0x01;
pub(crate) const CUVID_PKT_TIMESTAMP: c_ulong = 0x02;
pub(crate) const CUVID_PKT_DISCONTINUITY: c_ulong = 0x04;
pub(crate) const CUVID_PKT_ENDOFPICTURE: c_ulong = 0x08;
pub(crate) const CUVID_PKT_NOTIFY_EOS: c_ulong = 0x10;

#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct CUVIDDECODECAPS {
    pub eCodecType: cudaVideoCodec,
    pub eChromaFormat: cudaVideoChromaFormat,
    pub nBitDepthMinus8: c_uint,
    pub reserved1: [c_uint; 3],
    pub bIsSupported: c_uchar,
    pub nNumNVDECs: c_uchar,
    pub nOutputFormatMask: c_ushort,
    pub nMaxWidth: c_uint,
    pub nMaxHeight: c_uint,
    pub nMaxMBCount: c_uint,
    pub nMinWidth: c_ushort,
    pub nMinHeight: c_ushort,
    pub bIsHistogramSupported: c_uchar,
    pub nCounterBitDepth: c_uchar,
    pub nMaxHistogramBins: c_ushort,
    pub reserved3: [c_uint; 10],
}

/// `{ short left, top, right, bottom; }` of the create and reconfigure structs.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct ShortRect {
    pub left: c_short,
    pub top: c_short,
    pub right: c_short,
    pub bottom: c_short,
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub(crate) struct CUVIDDECODECREATEINFO {
    pub ulWidth: c_ulong,
    pub ulHeight: c_ulong,
    pub ulNumDecodeSurfaces: c_ulong,
    pub CodecType: cudaVideoCodec,
    pub ChromaFormat: cudaVideoChromaFormat,
    pub ulCreationFlags: c_ulong,
    pub bitDepthMinus8: c_ulong,
    pub ulIntraDecodeOnly: c_ulong,
    pub ulMaxWidth: c_ulong,
    pub ulMaxHeight: c_ulong,
    pub Reserved1: c_ulong,
    pub display_area: ShortRect,
    pub OutputFormat: cudaVideoSurfaceFormat,
    pub DeinterlaceMode: cudaVideoDeinterlaceMode,
    pub ulTargetWidth: c_ulong,
    pub ulTargetHeight: c_ulong,
    pub ulNumOutputSurfaces: c_ulong,
    pub vidLock: CUvideoctxlock,
    pub target_rect: ShortRect,
    pub enableHistogram: c_ulong,
    pub Reserved2: [c_ulong; 4],
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct FrameRate {
    pub numerator: c_uint,
    pub denominator: c_uint,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct IntRect {
    pub left: c_int,
    pub top: c_int,
    pub right: c_int,
    pub bottom: c_int,
}

/// `CUVIDEOFORMAT`, what the parser's sequence callback reports.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct CUVIDEOFORMAT {
    pub codec: cudaVideoCodec,
    pub frame_rate: FrameRate,
    pub progressive_sequence: c_uchar,
    pub bit_depth_luma_minus8: c_uchar,
    pub bit_depth_chroma_minus8: c_uchar,
    pub min_num_decode_surfaces: c_uchar,
    pub coded_width: c_uint,
    pub coded_height: c_uint,
    pub display_area: IntRect,
    pub chroma_format: cudaVideoChromaFormat,
    pub bitrate: c_uint,
    pub display_aspect_ratio: [c_int; 2],
    /// `video_format:3, video_full_range_flag:1, reserved:4` (one byte of bit fields), then
    /// color_primaries, transfer_characteristics, matrix_coefficients.
    pub video_signal_description: [c_uchar; 4],
    pub seqhdr_data_length: c_uint,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct CUVIDPARSERDISPINFO {
    pub picture_index: c_int,
    pub progressive_frame: c_int,
    pub top_field_first: c_int,
    pub repeat_first_field: c_int,
    pub timestamp: CUvideotimestamp,
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub(crate) struct CUVIDSOURCEDATAPACKET {
    pub flags: c_ulong,
    pub payload_size: c_ulong,
    pub payload: *const c_uchar,
    pub timestamp: CUvideotimestamp,
}

/// `CUVIDPICPARAMS`: the parser fills it and we hand it straight back to cuvidDecodePicture, so
/// only the leading fields are spelled out; the codec-specific union is opaque (4096 bytes,
/// 8-aligned).
#[repr(C)]
pub(crate) struct CUVIDPICPARAMS {
    pub PicWidthInMbs: c_int,
    pub FrameHeightInMbs: c_int,
    pub CurrPicIdx: c_int,
    pub field_pic_flag: c_int,
    pub bottom_field_flag: c_int,
    pub second_field: c_int,
    pub nBitstreamDataLen: c_uint,
    pub pBitstreamData: *const c_uchar,
    pub nNumSlices: c_uint,
    pub pSliceDataOffsets: *const c_uint,
    pub ref_pic_flag: c_int,
    pub intra_pic_flag: c_int,
    pub Reserved: [c_uint; 30],
    pub CodecSpecific: [u64; 512],
}

pub(crate) type PFNVIDSEQUENCECALLBACK = Option<unsafe extern "C" fn(*mut c_void, *mut CUVIDEOFORMAT) -> c_int>;
pub(crate) type PFNVIDDECODECALLBACK = Option<unsafe extern "C" fn(*mut c_void, *mut CUVIDPICPARAMS) -> c_int>;
pub(crate) type PFNVIDDISPLAYCALLBACK = Option<unsafe extern "C" fn(*mut c_void, *mut CUVIDPARSERDISPINFO) -> c_int>;
/// AV1 operating-point callback; we leave it unset (the parser then picks point 0).
pub(crate) type PFNVIDOPPOINTCALLBACK = Option<unsafe extern "C" fn(*mut c_void, *mut c_void) -> c_int>;

#[repr(C)]
#[derive(Clone, Copy)]
pub(crate) struct CUVIDPARSERPARAMS {
    pub CodecType: cudaVideoCodec,
    pub ulMaxNumDecodeSurfaces: c_uint,
    pub ulClockRate: c_uint,
    pub ulErrorThreshold: c_uint,
    pub ulMaxDisplayDelay: c_uint,
    /// `bAnnexb:1, uReserved:31`.
    pub bAnnexb_uReserved: c_uint,
    pub uReserved1: [c_uint; 4],
    pub pUserData: *mut c_void,
    pub pfnSequenceCallback: PFNVIDSEQUENCECALLBACK,
    pub pfnDecodePicture: PFNVIDDECODECALLBACK,
    pub pfnDisplayPicture: PFNVIDDISPLAYCALLBACK,
    pub pfnGetOperatingPoint: PFNVIDOPPOINTCALLBACK,
    pub pvReserved2: [*mut c_void; 6],
    pub pExtVideoInfo: *mut c_void,
}

/// `CUVIDPROCPARAMS`, the post-processing (map) parameters.
#[repr(C)]
#[derive(Clone, Copy)]
pub(crate) struct CUVIDPROCPARAMS {
    pub progressive_frame: c_int,
    pub second_field: c_int,
    pub top_field_first: c_int,
    pub unpaired_field: c_int,
    pub reserved_flags: c_uint,
    pub reserved_zero: c_uint,
    pub raw_input_dptr: u64,
    pub raw_input_pitch: c_uint,
    pub raw_input_format: c_uint,
    pub raw_output_dptr: u64,
    pub raw_output_pitch: c_uint,
    pub Reserved1: c_uint,
    /// The stream the map's post-processing (decode surface → output surface) runs on.
    pub output_stream: CUstream,
    pub Reserved: [c_uint; 46],
    pub histogram_dptr: *mut u64,
    pub Reserved2: [*mut c_void; 1],
}

#[repr(C)]
#[derive(Clone, Copy)]
pub(crate) struct CUVIDGETDECODESTATUS {
    pub decodeStatus: cuvidDecodeStatus,
    pub reserved: [c_uint; 31],
    pub pReserved: [*mut c_void; 8],
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct CUVIDRECONFIGUREDECODERINFO {
    pub ulWidth: c_uint,
    pub ulHeight: c_uint,
    pub ulTargetWidth: c_uint,
    pub ulTargetHeight: c_uint,
    pub ulNumDecodeSurfaces: c_uint,
    pub reserved1: [c_uint; 12],
    pub display_area: ShortRect,
    pub target_rect: ShortRect,
    pub reserved2: [c_uint; 11],
}

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

/// A zeroed `CUVIDPROCPARAMS` with the fields a map needs. (All-zero is a valid value of this
/// struct: integers and nullable pointers only.)
pub(crate) fn proc_params(disp: &CUVIDPARSERDISPINFO, stream: CUstream) -> CUVIDPROCPARAMS {
    CUVIDPROCPARAMS {
        progressive_frame: disp.progressive_frame,
        second_field: disp.repeat_first_field + 1,
        top_field_first: disp.top_field_first,
        unpaired_field: (disp.repeat_first_field < 0) as c_int,
        reserved_flags: 0,
        reserved_zero: 0,
        raw_input_dptr: 0,
        raw_input_pitch: 0,
        raw_input_format: 0,
        raw_output_dptr: 0,
        raw_output_pitch: 0,
        Reserved1: 0,
        output_stream: stream,
        Reserved: [0; 46],
        histogram_dptr: std::ptr::null_mut(),
        Reserved2: [std::ptr::null_mut(); 1],
    }
}
