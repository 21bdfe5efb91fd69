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
    g.gap(Hit::Picture(66), t);
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
    g.gap(Hit::Picture(33), t);
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
    g.gap(Hit::StartOf(33), t);
    g.packet(KeyPoint::None, REF, 33, t);
    assert!(exact(g.picture(33, false, t)), "a picture that starts with its first slice is whole");
    g.gap(Hit::StartOf(66), t);
    g.packet(KeyPoint::None, Picture { reference: true, starts_whole: false }, 66, t);
    let d = g.picture(66, false, t);
    assert!(d.corrupt && d.after_loss);
}

#[test]
fn a_hit_whose_picture_never_comes_counts_as_a_loss_of_unknown_place() {
    let t = Instant::now();
    let mut g = Integrity::default();
    g.gap(Hit::Picture(500), t);
    g.packet(KeyPoint::None, REF, 400, t);
    assert!(exact(g.picture(400, false, t)));
    g.packet(KeyPoint::None, REF, 1_600_000, t);
    assert!(g.picture(1_600_000, false, t).after_loss);
    g.gap(Hit::From(1_700_000), t);
    g.packet(KeyPoint::Full, REF, 1_700_000, t);
    let k = g.picture(1_700_000, false, t);
    assert!(k.after_loss && !k.keyframe, "pictures may be lost before it: no recovery point");
}

#[test]
fn a_gap_in_a_picture_already_sent_damages_it_and_what_came_after() {
    let t = Instant::now();
    let mut g = Integrity::default();
    g.packet(KeyPoint::None, REF, 10, t);
    g.packet(KeyPoint::None, REF, 20, t);
    g.gap(Hit::Picture(10), t);
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
