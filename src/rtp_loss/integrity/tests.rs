//! The integrity judge against loss and damage sequences: which pictures come out exact, suspect
//! or corrupt, and when a loss lets exact pictures come again.

use super::*;

const REF: Picture = Picture { reference: true, starts_whole: true };
const NON_REF: Picture = Picture { reference: false, starts_whole: true };

fn exact(i: FrameIntegrity) -> bool {
    i.exact()
}

#[test]
fn pictures_after_a_loss_are_suspect_until_the_next_idr_comes_out() {
    let t = Instant::now();
    let mut g = Integrity::default();
    g.packet(KeyPoint::Full, REF, 0, t);
    let first = g.picture(0, false, t);
    assert!(exact(first) && first.keyframe);
    g.packet(KeyPoint::None, REF, 33, t);
    assert!(exact(g.picture(33, false, t)));
    g.lost(t);
    g.packet(KeyPoint::None, REF, 100, t);
    let p = g.picture(100, false, t);
    assert!(p.after_loss && !p.corrupt);
    g.packet(KeyPoint::Full, REF, 133, t);
    assert!(g.is_recovery_point(133));
    g.packet(KeyPoint::None, REF, 166, t);
    assert!(exact(g.picture(133, false, t)), "the IDR itself is exact");
    assert!(exact(g.picture(166, false, t)));
    assert_eq!(g.suspect_for(t), None);
}

#[test]
fn pictures_sent_before_the_loss_stay_exact_whatever_the_decoder_delay() {
    // Decoder delay: packets 900 and 1000 sent, a loss noticed at 1100; their pictures come
    // out afterwards and are exact; 1100's is not.
    let t = Instant::now();
    let mut g = Integrity::default();
    g.packet(KeyPoint::None, REF, 900, t);
    g.packet(KeyPoint::None, REF, 1000, t);
    g.packet(KeyPoint::None, REF, 1100, t);
    g.lost(t);
    g.packet(KeyPoint::None, REF, 1200, t);
    assert!(exact(g.picture(900, false, t)));
    assert!(exact(g.picture(1000, false, t)));
    assert!(g.picture(1100, false, t).after_loss);
    assert!(g.picture(1200, false, t).after_loss);
}

#[test]
fn a_key_packet_in_the_read_that_noticed_the_loss_is_no_recovery_point() {
    // The loss is noticed with the key packet: it may be the damaged one.
    let t = Instant::now();
    let mut g = Integrity::default();
    g.packet(KeyPoint::None, REF, 500, t);
    g.lost(t);
    g.packet(KeyPoint::Full, REF, 1000, t);
    g.lost(t);
    assert!(g.picture(1000, false, t).after_loss);
    g.packet(KeyPoint::Full, REF, 2000, t);
    assert!(g.picture(1500, false, t).after_loss, "leading picture before the recovery point");
    assert!(exact(g.picture(2000, false, t)));
}

#[test]
fn a_damaged_picture_is_corrupt_and_taints_what_follows() {
    let t = Instant::now();
    let mut g = Integrity::default();
    g.packet(KeyPoint::None, REF, 0, t);
    g.packet(KeyPoint::None, REF, 33, t);
    g.packet(KeyPoint::None, REF, 17, t);
    let p = g.picture(0, true, t);
    assert!(p.corrupt && !p.after_loss);
    assert!(g.picture(33, false, t).after_loss, "sent before the damaged picture came out, but after it in decode order");
    assert!(g.picture(17, false, t).after_loss);
    // The next IDR was sent before the damaged picture came out (decoder delay): it is the
    // recovery point.
    g.packet(KeyPoint::None, REF, 100, t);
    g.packet(KeyPoint::Full, REF, 133, t);
    g.packet(KeyPoint::None, REF, 166, t);
    assert!(g.picture(66, false, t).after_loss);
    let d = g.picture(100, true, t);
    assert!(d.corrupt);
    assert!(exact(g.picture(133, false, t)));
    assert!(exact(g.picture(166, false, t)));
    g.packet(KeyPoint::Full, REF, 66, t);
    assert!(exact(g.picture(66, false, t)));
}

#[test]
fn recovery_point_sei_counts_frames_before_the_stream_is_exact_again() {
    let t = Instant::now();
    let mut g = Integrity::default();
    g.lost(t);
    g.packet(KeyPoint::After(2), REF, 10, t);
    g.packet(KeyPoint::None, REF, 20, t);
    g.packet(KeyPoint::None, REF, 30, t);
    assert!(!g.is_recovery_point(30), "the end of a sweep still predicts from earlier pictures: no fresh decoder there");
    assert!(g.picture(10, false, t).after_loss, "refresh in progress");
    assert!(g.picture(20, false, t).after_loss, "refresh in progress");
    assert!(exact(g.picture(30, false, t)), "recovery_frame_cnt reached");
}

#[test]
fn a_second_loss_cancels_a_recovery_point_not_yet_out() {
    let t = Instant::now();
    let mut g = Integrity::default();
    g.lost(t);
    g.packet(KeyPoint::Full, REF, 10, t);
    g.lost(t);
    assert!(g.picture(10, false, t).after_loss);
    assert!(g.suspect_for(t + Duration::from_secs(1)).unwrap() >= Duration::from_secs(1));
}

#[test]
fn a_gap_inside_a_reference_picture_marks_it_corrupt_and_what_follows_until_the_idr() {
    let t = Instant::now();
    let mut g = Integrity::default();
    g.packet(KeyPoint::Full, REF, 0, t);
    g.gap(Hit::Picture(66), 66, t);
    g.packet(KeyPoint::None, REF, 33, t);
    g.packet(KeyPoint::None, REF, 66, t);
    g.packet(KeyPoint::None, REF, 100, t);
    assert!(exact(g.picture(0, false, t)));
    assert!(exact(g.picture(33, false, t)), "the picture before the gap is whole");
    let d = g.picture(66, false, t);
    assert!(d.corrupt && d.after_loss);
    assert!(g.picture(100, false, t).after_loss);
    g.packet(KeyPoint::Full, REF, 133, t);
    assert!(exact(g.picture(133, false, t)));
}

#[test]
fn a_lost_non_reference_picture_marks_itself_only() {
    // IPBB-like: B pictures at 33 and 66 are sent after the P at 100.
    let t = Instant::now();
    let mut g = Integrity::default();
    g.packet(KeyPoint::Full, REF, 0, t);
    g.packet(KeyPoint::None, REF, 100, t);
    g.gap(Hit::Picture(33), 33, t);
    g.packet(KeyPoint::None, NON_REF, 33, t);
    g.packet(KeyPoint::None, NON_REF, 66, t);
    g.packet(KeyPoint::None, REF, 200, t);
    assert!(exact(g.picture(0, false, t)));
    // The decoder also finds errors in it: still only that picture.
    let b = g.picture(33, true, t);
    assert!(b.corrupt && !b.after_loss);
    assert!(exact(g.picture(66, false, t)));
    assert!(exact(g.picture(100, false, t)));
    assert!(exact(g.picture(200, false, t)));
    assert_eq!(g.suspect_for(t), None);
}

#[test]
fn whole_units_lost_before_a_picture_damage_it_only_if_its_first_slice_is_gone() {
    let t = Instant::now();
    let mut g = Integrity::default();
    g.gap(Hit::StartOf(33), 0, t);
    g.packet(KeyPoint::None, REF, 33, t);
    assert!(exact(g.picture(33, false, t)), "a picture that starts with its first slice is whole");
    g.gap(Hit::StartOf(66), 33, t);
    g.packet(KeyPoint::None, Picture { reference: true, starts_whole: false }, 66, t);
    let d = g.picture(66, false, t);
    assert!(d.corrupt && d.after_loss);
}

/// The first mechanism behind marks on exact pictures: a picture whose start was lost never goes
/// in (the rest of its data is appended to the one before), and its hit waited a second of
/// stream time and then marked the picture it came at and all up to the next IDR, often after an
/// IDR had recovered the stream. It is placed between the two packets around it instead.
#[test]
fn a_picture_lost_whole_is_placed_between_its_neighbours_and_never_fires_later() {
    let t = Instant::now();
    let mut g = Integrity::default();
    g.packet(KeyPoint::Full, REF, 0, t);
    // The gap came with the packet before the lost picture (the picture at 66 lost its start).
    g.gap(Hit::StartOf(66), 33, t);
    g.packet(KeyPoint::None, REF, 33, t);
    // No packet of pts 66: the next one is 100 (H.264's frame_num gap would mark it, if 66 was
    // a reference; here the tracker is told nothing more).
    g.packet(KeyPoint::None, REF, 100, t);
    for p in [0, 33, 100] {
        assert!(exact(g.picture(p, false, t)), "pts {p}");
    }
    // A second of stream time later, and after the next IDR: nothing fires.
    g.packet(KeyPoint::Full, REF, 1_000_000, t);
    g.packet(KeyPoint::None, REF, 1_300_000, t);
    g.packet(KeyPoint::None, REF, 2_000_000, t);
    for p in [1_000_000, 1_300_000, 2_000_000] {
        assert!(exact(g.picture(p, false, t)), "pts {p}");
    }
    assert_eq!(g.suspect_for(t), None);
}

/// Where nothing tells whether a picture lost whole was a reference (no `frame_num`), the
/// pictures after it are suspect from the packet after the gap, at once, not a second later.
#[test]
fn a_picture_lost_whole_makes_what_follows_it_suspect_where_references_are_not_read() {
    let t = Instant::now();
    let mut g = Integrity::default();
    g.packet(KeyPoint::Full, REF, 0, t);
    g.gap(Hit::StartOf(66), 33, t);
    g.gap(Hit::From(66), 33, t);
    g.packet(KeyPoint::None, REF, 33, t);
    g.packet(KeyPoint::None, REF, 100, t);
    g.packet(KeyPoint::None, REF, 133, t);
    assert!(exact(g.picture(0, false, t)));
    assert!(exact(g.picture(33, false, t)), "before the lost picture");
    assert!(g.picture(100, false, t).after_loss);
    assert!(g.picture(133, false, t).after_loss);
    g.packet(KeyPoint::Full, REF, 1_000_000, t);
    assert!(exact(g.picture(1_000_000, false, t)));
}

/// FFmpeg reads ahead while it probes a stream at open: a gap five pictures on is reported before
/// the first picture goes in. Its hits wait for the picture before the gap; the pictures before
/// that are exact, and a picture lost whole there marks from the next one on.
#[test]
fn a_gap_reported_ahead_of_its_place_marks_from_its_place() {
    let t = Instant::now();
    let mut g = Integrity::default();
    g.gap(Hit::StartOf(166), 133, t);
    g.gap(Hit::From(166), 133, t);
    for p in [0, 33, 66, 100, 133, 200, 233] {
        g.packet(if p == 0 { KeyPoint::Full } else { KeyPoint::None }, REF, p, t);
    }
    for p in [0, 33, 66, 100, 133] {
        assert!(exact(g.picture(p, false, t)), "pts {p}, before the gap");
    }
    assert!(g.picture(200, false, t).after_loss);
    assert!(g.picture(233, false, t).after_loss);
}

/// Two pictures in a row lost whole: the second gap's place (the first lost picture) never goes
/// in; both are placed at the next packet, and nothing fires later.
#[test]
fn two_pictures_lost_whole_in_a_row_are_both_placed() {
    let t = Instant::now();
    let mut g = Integrity::default();
    g.packet(KeyPoint::Full, REF, 0, t);
    g.gap(Hit::StartOf(66), 33, t);
    g.gap(Hit::StartOf(100), 66, t);
    g.packet(KeyPoint::None, REF, 33, t);
    g.packet(KeyPoint::None, REF, 133, t);
    g.packet(KeyPoint::None, REF, 2_000_000, t);
    for p in [0, 33, 133, 2_000_000] {
        assert!(exact(g.picture(p, false, t)), "pts {p}");
    }
    assert_eq!(g.suspect_for(t), None);
}

/// Two units with the timestamp of the picture before the gap (its fields, or a unit of its own
/// for its parameter sets): the hit's picture is still the next one after them.
#[test]
fn a_hit_waits_past_every_unit_of_the_picture_before_its_gap() {
    let t = Instant::now();
    let mut g = Integrity::default();
    g.packet(KeyPoint::Full, REF, 0, t);
    g.gap(Hit::StartOf(66), 33, t);
    g.packet(KeyPoint::None, REF, 33, t);
    g.packet(KeyPoint::None, REF, 33, t);
    g.packet(KeyPoint::None, Picture { reference: true, starts_whole: false }, 66, t);
    assert!(exact(g.picture(0, false, t)));
    let d = g.picture(66, false, t);
    assert!(d.corrupt && d.after_loss, "{d:?}");
}

/// A hit waiting when a packet without a timestamp comes may be that packet's: it and what
/// follows are suspect.
#[test]
fn a_hit_met_by_a_packet_without_a_timestamp_counts_there() {
    let t = Instant::now();
    let mut g = Integrity::default();
    g.packet(KeyPoint::None, REF, 0, t);
    g.gap(Hit::Picture(33), 33, t);
    g.packet(KeyPoint::None, REF, i64::MIN, t);
    g.packet(KeyPoint::None, REF, 66, t);
    assert!(exact(g.picture(0, false, t)));
    assert!(g.picture(i64::MIN, false, t).after_loss);
    assert!(g.picture(66, false, t).after_loss);
}

/// The second mechanism: an IDR that went in whole after a loss, still inside the decoder when
/// the next picture's loss came, was marked for it. It and the pictures between it and the loss
/// are exact; the damaged picture and those after it are not.
#[test]
fn a_whole_idr_still_in_the_decoder_is_not_marked_for_a_later_pictures_loss() {
    let t = Instant::now();
    let mut g = Integrity::default();
    g.packet(KeyPoint::Full, REF, 0, t);
    assert!(exact(g.picture(0, false, t)));
    g.packet(KeyPoint::None, REF, 33, t);
    g.lost(t);
    g.packet(KeyPoint::None, REF, 66, t);
    assert!(g.picture(33, false, t).after_loss);
    // The IDR goes in whole, then the picture after the next one loses data: both still inside
    // the decoder.
    g.packet(KeyPoint::Full, REF, 1_000, t);
    g.packet(KeyPoint::None, REF, 1_033, t);
    g.gap(Hit::Picture(1_066), 1_066, t);
    g.packet(KeyPoint::None, REF, 1_066, t);
    g.packet(KeyPoint::None, REF, 1_100, t);
    assert!(g.picture(66, false, t).after_loss, "before the IDR");
    let k = g.picture(1_000, false, t);
    assert!(exact(k) && k.keyframe, "the whole IDR: {k:?}");
    assert!(exact(g.picture(1_033, false, t)), "between the IDR and the loss");
    let d = g.picture(1_066, false, t);
    assert!(d.corrupt && d.after_loss);
    assert!(g.picture(1_100, false, t).after_loss);
    g.packet(KeyPoint::Full, REF, 2_000, t);
    assert!(exact(g.picture(2_000, false, t)));
}

/// The same at a session's start (joined between key frames): its first IDR, whole, comes out
/// exact though the next picture lost data; a damaged IDR does not.
#[test]
fn a_sessions_first_idr_is_exact_though_the_next_picture_is_damaged_and_a_damaged_idr_is_not() {
    let t = Instant::now();
    let mut g = Integrity::at_session_start();
    g.packet(KeyPoint::None, REF, 100, t);
    g.packet(KeyPoint::Full, REF, 133, t);
    g.gap(Hit::Picture(166), 166, t);
    g.packet(KeyPoint::None, REF, 166, t);
    assert!(g.picture(100, false, t).after_loss);
    assert!(exact(g.picture(133, false, t)));
    assert!(g.picture(166, false, t).corrupt);
    g.gap(Hit::Picture(1_133), 1_133, t);
    g.packet(KeyPoint::Full, REF, 1_133, t);
    g.packet(KeyPoint::None, REF, 1_166, t);
    let k = g.picture(1_133, false, t);
    assert!(k.corrupt && !k.keyframe);
    assert!(g.picture(1_166, false, t).after_loss);
}

/// Leading pictures (open GOP: sent after the recovery point, shown before it) may reference
/// pictures before it: a later loss leaves them suspect.
#[test]
fn leading_pictures_stay_suspect_when_a_loss_follows_the_recovery_point() {
    let t = Instant::now();
    let mut g = Integrity::default();
    g.lost(t);
    g.packet(KeyPoint::Full, REF, 1_000, t);
    g.packet(KeyPoint::None, NON_REF, 966, t);
    g.packet(KeyPoint::None, REF, 1_100, t);
    g.lost(t);
    assert!(g.picture(966, false, t).after_loss, "leading picture");
    assert!(exact(g.picture(1_000, false, t)));
    assert!(g.picture(1_100, false, t).after_loss, "the packet the loss was noticed at");
}

#[test]
fn a_gap_in_a_picture_already_sent_damages_it_and_what_came_after() {
    let t = Instant::now();
    let mut g = Integrity::default();
    g.packet(KeyPoint::None, REF, 10, t);
    g.packet(KeyPoint::None, REF, 20, t);
    g.gap(Hit::Picture(10), 10, t);
    let d = g.picture(10, false, t);
    assert!(d.corrupt);
    assert!(g.picture(20, false, t).after_loss);
}

#[test]
fn a_session_joined_mid_gop_is_exact_only_from_its_first_recovery_point() {
    let t = Instant::now();
    let mut g = Integrity::at_session_start();
    g.packet(KeyPoint::None, REF, 100, t);
    g.packet(KeyPoint::Full, REF, 133, t);
    // The damaged picture decoded from nothing, out after the IDR went in, without a timestamp.
    assert!(g.picture(i64::MIN, false, t).after_loss);
    assert!(g.picture(100, false, t).after_loss);
    let k = g.picture(133, false, t);
    assert!(exact(k) && k.keyframe);
    assert_eq!(g.suspect_for(t), None, "no loss: nothing to reconnect for");
    assert!(!g.is_recovery_point(133), "no decoder restart at a session's start");
}

/// A gap inside one picture (the same timestamp on both sides) whose next packet starts the
/// picture's first slice lost only what comes before its slices (a parameter set repeated before
/// an IDR): no picture is hit. One whose next packet is a later slice, or the rest of a cut one,
/// hit that picture.
#[test]
fn a_gap_before_a_pictures_first_slice_hits_no_picture() {
    let keys = KeyScan::h264_for_tests();
    let tb = ffmpeg_next::Rational::new(1, 90_000);
    let gap = |payload: [u8; 3]| RtpGap {
        stream: 0,
        lost: 1,
        pts_before: Some(9000),
        pts_after: Some(9000),
        marker_before: false,
        payload_after: (3, [payload[0], payload[1], payload[2], 0, 0, 0]),
    };
    // The PPS lost between the SPS and the IDR's first fragment (first_mb_in_slice 0).
    assert_eq!(hits_of(&gap([0x7c, 0x85, 0x88]), &keys, tb, true), Some([None, None, None]));
    // A slice lost before the one starting at macroblock 3; a fragment's middle lost.
    assert_eq!(hits_of(&gap([0x65, 0x20, 0]), &keys, tb, true), Some([Some(Hit::Picture(100_000)), None, None]));
    assert_eq!(hits_of(&gap([0x7c, 0x05, 0x88]), &keys, tb, true), Some([Some(Hit::Picture(100_000)), None, None]));
    // A PPS or SPS after the gap (one of the sets before an IDR): what was lost came before it, so
    // before the slices of its access unit; the picture is damaged only if that unit does not
    // start with its first slice (slices lost before the set).
    assert_eq!(hits_of(&gap([0x68, 0xce, 0x38]), &keys, tb, true), Some([Some(Hit::StartOf(100_000)), None, None]));
    assert_eq!(hits_of(&gap([0x67, 0x42, 0xc0]), &keys, tb, true), Some([Some(Hit::StartOf(100_000)), None, None]));
    // An end of sequence follows the slices: what came before it may have been slice data.
    assert_eq!(hits_of(&gap([0x0a, 0, 0]), &keys, tb, true), Some([Some(Hit::Picture(100_000)), None, None]));
}

/// A parameter set lost between the sets a camera sends before an IDR when asked for a key
/// frame (SPS PPS [SPS lost] PPS IDR): the IDR and the GOP after it are exact. The IDR used to
/// be marked, and with it every exact picture of its GOP.
#[test]
fn a_set_lost_before_an_idrs_second_set_marks_nothing() {
    let keys = KeyScan::h264_for_tests();
    let tb = ffmpeg_next::Rational::new(1, 90_000);
    let t = Instant::now();
    let at = |ticks: i64| pts_us(Some(ticks), tb);
    let mut g = Integrity::default();
    g.packet(KeyPoint::Full, REF, at(0), t);
    g.packet(KeyPoint::None, REF, at(3000), t);
    let lost = RtpGap { stream: 0, lost: 1, pts_before: Some(6000), pts_after: Some(6000), marker_before: false, payload_after: (3, [0x68, 0xce, 0x38, 0, 0, 0]) };
    let hits = hits_of(&lost, &keys, tb, true).unwrap();
    hits.into_iter().flatten().for_each(|h| g.gap(h, at(6000), t));
    g.packet(KeyPoint::Full, REF, at(6000), t);
    g.packet(KeyPoint::None, REF, at(9000), t);
    for p in [0, 3000, 6000, 9000].map(at) {
        assert!(exact(g.picture(p, false, t)), "{p}");
    }
    assert_eq!(g.suspect_for(t), None);
}

/// Slices lost before a parameter set inside a picture: the picture's unit does not start with
/// its first slice, and is damaged. A picture that a parameter set between its slices splits in
/// two units of one timestamp (FFmpeg's parser ends a unit there): a second unit that does not
/// start with its first slice is damaged though the first did; a unit of the next timestamp
/// ends the wait.
#[test]
fn slices_lost_before_a_parameter_set_damage_their_picture() {
    let t = Instant::now();
    let cut = Picture { reference: true, starts_whole: false };
    let mut g = Integrity::default();
    g.packet(KeyPoint::Full, REF, 0, t);
    g.gap(Hit::StartOf(33), 33, t);
    g.packet(KeyPoint::None, cut, 33, t);
    assert!(exact(g.picture(0, false, t)));
    let d = g.picture(33, false, t);
    assert!(d.corrupt && d.after_loss, "{d:?}");

    let mut g = Integrity::default();
    g.packet(KeyPoint::Full, REF, 0, t);
    g.gap(Hit::StartOf(33), 33, t);
    g.packet(KeyPoint::None, REF, 33, t);
    g.packet(KeyPoint::None, cut, 33, t);
    g.packet(KeyPoint::None, REF, 66, t);
    assert!(exact(g.picture(0, false, t)));
    assert!(g.picture(33, false, t).corrupt);
    assert!(g.picture(66, false, t).after_loss);

    let mut g = Integrity::default();
    g.packet(KeyPoint::Full, REF, 0, t);
    g.gap(Hit::StartOf(33), 33, t);
    g.packet(KeyPoint::None, REF, 33, t);
    g.packet(KeyPoint::None, REF, 66, t);
    g.packet(KeyPoint::None, cut, 66, t);
    for p in [0, 33, 66] {
        assert!(exact(g.picture(p, false, t)), "{p}: the hit ended with the unit of 66");
    }
}
