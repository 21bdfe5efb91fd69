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

use std::ffi::{c_int, c_short, c_uchar, c_uint, c_ulong, c_ushort, c_void};

mod layout;

pub use layout::layout_report;

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
