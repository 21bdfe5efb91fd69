/* Prints the sizes and offsets of the NVDEC structs nvcam declares by hand (src/gpu/nvcuvid.rs),
 * from NVIDIA's headers as Debian's libffmpeg-nvenc-dev ships them (MIT licensed):
 *   cc -I/usr/include/ffnvcodec tests/c/nvcuvid_layout.c -o /tmp/l && /tmp/l
 * tests/nvcuvid_layout.rs compiles and runs it and compares with nvcuvid::layout_report(). */
#include <stdio.h>
#include <stddef.h>
#include <dynlink_cuda.h>
#include <dynlink_cuviddec.h>
#include <dynlink_nvcuvid.h>
#define P(name, v) printf("%s %zu\n", name, (size_t)(v))
int main(void) {
    P("CUVIDDECODECAPS", sizeof(CUVIDDECODECAPS));
    P("CUVIDDECODECAPS.bIsSupported", offsetof(CUVIDDECODECAPS, bIsSupported));
    P("CUVIDDECODECAPS.nMaxWidth", offsetof(CUVIDDECODECAPS, nMaxWidth));
    P("CUVIDDECODECAPS.nMinWidth", offsetof(CUVIDDECODECAPS, nMinWidth));
    P("CUVIDDECODECAPS.bIsHistogramSupported", offsetof(CUVIDDECODECAPS, bIsHistogramSupported));
    P("CUVIDDECODECAPS.reserved3", offsetof(CUVIDDECODECAPS, reserved3));
    P("CUVIDDECODECREATEINFO", sizeof(CUVIDDECODECREATEINFO));
    P("CUVIDDECODECREATEINFO.CodecType", offsetof(CUVIDDECODECREATEINFO, CodecType));
    P("CUVIDDECODECREATEINFO.ulCreationFlags", offsetof(CUVIDDECODECREATEINFO, ulCreationFlags));
    P("CUVIDDECODECREATEINFO.display_area", offsetof(CUVIDDECODECREATEINFO, display_area));
    P("CUVIDDECODECREATEINFO.OutputFormat", offsetof(CUVIDDECODECREATEINFO, OutputFormat));
    P("CUVIDDECODECREATEINFO.ulTargetWidth", offsetof(CUVIDDECODECREATEINFO, ulTargetWidth));
    P("CUVIDDECODECREATEINFO.vidLock", offsetof(CUVIDDECODECREATEINFO, vidLock));
    P("CUVIDDECODECREATEINFO.target_rect", offsetof(CUVIDDECODECREATEINFO, target_rect));
    P("CUVIDDECODECREATEINFO.enableHistogram", offsetof(CUVIDDECODECREATEINFO, enableHistogram));
    P("CUVIDDECODECREATEINFO.Reserved2", offsetof(CUVIDDECODECREATEINFO, Reserved2));
    P("CUVIDEOFORMAT", sizeof(CUVIDEOFORMAT));
    P("CUVIDEOFORMAT.frame_rate", offsetof(CUVIDEOFORMAT, frame_rate));
    P("CUVIDEOFORMAT.progressive_sequence", offsetof(CUVIDEOFORMAT, progressive_sequence));
    P("CUVIDEOFORMAT.min_num_decode_surfaces", offsetof(CUVIDEOFORMAT, min_num_decode_surfaces));
    P("CUVIDEOFORMAT.coded_width", offsetof(CUVIDEOFORMAT, coded_width));
    P("CUVIDEOFORMAT.display_area", offsetof(CUVIDEOFORMAT, display_area));
    P("CUVIDEOFORMAT.chroma_format", offsetof(CUVIDEOFORMAT, chroma_format));
    P("CUVIDEOFORMAT.display_aspect_ratio", offsetof(CUVIDEOFORMAT, display_aspect_ratio));
    P("CUVIDEOFORMAT.video_signal_description", offsetof(CUVIDEOFORMAT, video_signal_description));
    P("CUVIDEOFORMAT.seqhdr_data_length", offsetof(CUVIDEOFORMAT, seqhdr_data_length));
    P("CUVIDPARSERDISPINFO", sizeof(CUVIDPARSERDISPINFO));
    P("CUVIDPARSERDISPINFO.timestamp", offsetof(CUVIDPARSERDISPINFO, timestamp));
    P("CUVIDSOURCEDATAPACKET", sizeof(CUVIDSOURCEDATAPACKET));
    P("CUVIDSOURCEDATAPACKET.payload", offsetof(CUVIDSOURCEDATAPACKET, payload));
    P("CUVIDSOURCEDATAPACKET.timestamp", offsetof(CUVIDSOURCEDATAPACKET, timestamp));
    P("CUVIDPARSERPARAMS", sizeof(CUVIDPARSERPARAMS));
    P("CUVIDPARSERPARAMS.ulMaxDisplayDelay", offsetof(CUVIDPARSERPARAMS, ulMaxDisplayDelay));
    P("CUVIDPARSERPARAMS.uReserved1", offsetof(CUVIDPARSERPARAMS, uReserved1));
    P("CUVIDPARSERPARAMS.pUserData", offsetof(CUVIDPARSERPARAMS, pUserData));
    P("CUVIDPARSERPARAMS.pfnSequenceCallback", offsetof(CUVIDPARSERPARAMS, pfnSequenceCallback));
    P("CUVIDPARSERPARAMS.pfnGetOperatingPoint", offsetof(CUVIDPARSERPARAMS, pfnGetOperatingPoint));
    P("CUVIDPARSERPARAMS.pvReserved2", offsetof(CUVIDPARSERPARAMS, pvReserved2));
    P("CUVIDPARSERPARAMS.pExtVideoInfo", offsetof(CUVIDPARSERPARAMS, pExtVideoInfo));
    P("CUVIDPROCPARAMS", sizeof(CUVIDPROCPARAMS));
    P("CUVIDPROCPARAMS.raw_input_dptr", offsetof(CUVIDPROCPARAMS, raw_input_dptr));
    P("CUVIDPROCPARAMS.raw_output_dptr", offsetof(CUVIDPROCPARAMS, raw_output_dptr));
    P("CUVIDPROCPARAMS.output_stream", offsetof(CUVIDPROCPARAMS, output_stream));
    P("CUVIDPROCPARAMS.Reserved", offsetof(CUVIDPROCPARAMS, Reserved));
    P("CUVIDPROCPARAMS.histogram_dptr", offsetof(CUVIDPROCPARAMS, histogram_dptr));
    P("CUVIDPROCPARAMS.Reserved2", offsetof(CUVIDPROCPARAMS, Reserved2));
    P("CUVIDGETDECODESTATUS", sizeof(CUVIDGETDECODESTATUS));
    P("CUVIDGETDECODESTATUS.pReserved", offsetof(CUVIDGETDECODESTATUS, pReserved));
    P("CUVIDRECONFIGUREDECODERINFO", sizeof(CUVIDRECONFIGUREDECODERINFO));
    P("CUVIDRECONFIGUREDECODERINFO.ulNumDecodeSurfaces", offsetof(CUVIDRECONFIGUREDECODERINFO, ulNumDecodeSurfaces));
    P("CUVIDRECONFIGUREDECODERINFO.display_area", offsetof(CUVIDRECONFIGUREDECODERINFO, display_area));
    P("CUVIDRECONFIGUREDECODERINFO.target_rect", offsetof(CUVIDRECONFIGUREDECODERINFO, target_rect));
    P("CUVIDRECONFIGUREDECODERINFO.reserved2", offsetof(CUVIDRECONFIGUREDECODERINFO, reserved2));
    P("CUVIDPICPARAMS", sizeof(CUVIDPICPARAMS));
    P("CUVIDPICPARAMS.CurrPicIdx", offsetof(CUVIDPICPARAMS, CurrPicIdx));
    P("CUVIDPICPARAMS.nBitstreamDataLen", offsetof(CUVIDPICPARAMS, nBitstreamDataLen));
    P("CUVIDPICPARAMS.pBitstreamData", offsetof(CUVIDPICPARAMS, pBitstreamData));
    P("CUVIDPICPARAMS.nNumSlices", offsetof(CUVIDPICPARAMS, nNumSlices));
    P("CUVIDPICPARAMS.pSliceDataOffsets", offsetof(CUVIDPICPARAMS, pSliceDataOffsets));
    P("CUVIDPICPARAMS.ref_pic_flag", offsetof(CUVIDPICPARAMS, ref_pic_flag));
    P("CUVIDPICPARAMS.intra_pic_flag", offsetof(CUVIDPICPARAMS, intra_pic_flag));
    P("CUVIDPICPARAMS.Reserved", offsetof(CUVIDPICPARAMS, Reserved));
    P("CUVIDPICPARAMS.CodecSpecific", offsetof(CUVIDPICPARAMS, CodecSpecific));
    return 0;
}
