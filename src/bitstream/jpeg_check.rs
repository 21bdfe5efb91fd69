//! Whether a JPEG packet is whole, read from its markers alone: the same answer for every
//! decoder, before any of them sees the packet.
//!
//! A JPEG cut short or with bytes lost still decodes on every engine: FFmpeg emulates the missing
//! end-of-image marker and fills the rest, NVDEC and nvJPEG decode what is there, and none of them
//! says so. The markers tell: a whole picture starts with SOI, has its frame header and a scan, and
//! ends with EOI; inside the entropy-coded data every 0xFF byte is stuffed (0xFF 0x00) or a
//! restart marker, and restart markers count 0..7 in turn, one per restart interval.
//!
//! A damaged Huffman code inside a scan keeps the markers whole. FFmpeg and direct NVDEC (whose
//! parser decodes the codes on the host) refuse a code no table holds; nvJPEG's hardware back
//! end decodes it without an error. One kind of it the bytes show: JPEG's canonical Huffman codes
//! never use the all-one code, so a run of one bits in valid data spans at most a code's tail
//! (15), its magnitude bits (15 at 12 bits, 11 at 8) and the next code's head (15), plus at most 7
//! bits of padding before a marker: 45 or fewer. Six stuffed 0xFF bytes in a row (48 one bits)
//! are therefore an undecodable code (a burst of 0xFF fill, say), whichever decoder follows.
//! Other bad codes need a Huffman decode to find, which costs what direct NVDEC's parser spends.
//!
//! The check reads the headers and searches the entropy-coded data for 0xFF bytes only
//! (`memchr`), a few microseconds for a 1080p picture.

/// Why a JPEG packet is not a whole picture, or None if its markers are whole.
pub(crate) fn damage(data: &[u8]) -> Option<&'static str> {
    if data.len() < 4 || data[0] != 0xFF || data[1] != 0xD8 {
        return Some("no start-of-image marker");
    }
    let mut pos = 2;
    // Restart interval (MCUs), MCUs per picture, whether the one scan covers every component of
    // a baseline picture (only then does the number of restart markers follow from the size).
    let (mut interval, mut mcus, mut components, mut baseline) = (0usize, 0usize, 0usize, false);
    let (mut frame, mut scans, mut restarts_checked) = (false, 0usize, true);
    loop {
        // A marker: 0xFF, any fill bytes (0xFF), then the code.
        if pos >= data.len() || data[pos] != 0xFF {
            return Some(if pos >= data.len() { "cut short (no end-of-image marker)" } else { "bytes where a marker must be" });
        }
        while pos < data.len() && data[pos] == 0xFF {
            pos += 1;
        }
        let Some(&code) = data.get(pos) else { return Some("cut short (no end-of-image marker)") };
        pos += 1;
        match code {
            0xD9 => {
                if !frame || scans == 0 {
                    return Some("no frame header or scan before the end-of-image marker");
                }
                return (!restarts_checked).then_some("restart markers missing or out of order");
            }
            0x01 => continue,
            0x00 | 0xD0..=0xD8 => return Some("a marker out of place"),
            _ => {}
        }
        let Some(len) = data.get(pos..pos + 2).map(|b| u16::from_be_bytes([b[0], b[1]]) as usize) else {
            return Some("cut short inside a header");
        };
        if len < 2 || pos + len > data.len() {
            return Some("cut short inside a header");
        }
        let seg = &data[pos + 2..pos + len];
        pos += len;
        match code {
            // Frame headers (SOF0..SOF15 but DHT, JPG and DAC).
            0xC0..=0xCF if !matches!(code, 0xC4 | 0xC8 | 0xCC) => {
                if frame || seg.len() < 6 {
                    return Some("a second or short frame header");
                }
                let (h, w, n) = (u16::from_be_bytes([seg[1], seg[2]]) as usize, u16::from_be_bytes([seg[3], seg[4]]) as usize, seg[5] as usize);
                if w == 0 || n == 0 || seg.len() < 6 + 3 * n {
                    return Some("a frame header with no size or components");
                }
                let comps = &seg[6..6 + 3 * n];
                let (hmax, vmax) = comps.chunks(3).fold((1, 1), |(a, b), c| (a.max((c[1] >> 4) as usize), b.max((c[1] & 15) as usize)));
                let (hmax, vmax) = if n == 1 { (1, 1) } else { (hmax, vmax) };
                // Height 0 means "given later" (DNL): the count cannot be known.
                mcus = w.div_ceil(8 * hmax) * h.div_ceil(8 * vmax);
                components = n;
                baseline = matches!(code, 0xC0 | 0xC1) && h > 0;
                frame = true;
            }
            0xDD => {
                if seg.len() < 2 {
                    return Some("a short restart-interval header");
                }
                interval = u16::from_be_bytes([seg[0], seg[1]]) as usize;
            }
            0xDA => {
                if !frame || seg.is_empty() {
                    return Some("a scan before the frame header");
                }
                scans += 1;
                let all = seg[0] as usize == components;
                let (end, restarts) = match entropy_end(data, pos) {
                    Ok(v) => v,
                    Err(why) => return Some(why),
                };
                pos = end;
                if baseline && interval > 0 && all && scans == 1 {
                    restarts_checked = restarts == mcus.div_ceil(interval) - 1;
                }
            }
            _ => {}
        }
    }
}

/// Stuffed 0xFF bytes in a row that valid entropy-coded data never holds (48 one bits; see the
/// module's note).
const ONE_RUN_BYTES: usize = 6;

/// The end of the entropy-coded data starting at `pos` (where the next marker's 0xFF is) and
/// how many restart markers it held, or why it is not whole.
fn entropy_end(data: &[u8], mut pos: usize) -> Result<(usize, usize), &'static str> {
    let mut restarts = 0usize;
    // Stuffed 0xFF bytes back to back, and where the last one ended.
    let (mut ones, mut last_end) = (0usize, usize::MAX);
    loop {
        let Some(i) = memchr::memchr(0xFF, &data[pos..]) else { return Err("cut short inside a scan") };
        let ff = pos + i;
        // Fill bytes may precede a marker.
        let mut j = ff + 1;
        while j < data.len() && data[j] == 0xFF {
            j += 1;
        }
        match data.get(j) {
            None => return Err("cut short inside a scan"),
            Some(0x00) if j == ff + 1 => {
                ones = if ff == last_end { ones + 1 } else { 1 };
                if ones >= ONE_RUN_BYTES {
                    return Err("a run of one bits no Huffman code makes (an undecodable code)");
                }
                last_end = j + 1;
                pos = j + 1;
            }
            Some(&m @ 0xD0..=0xD7) => {
                if (m - 0xD0) as usize != restarts % 8 {
                    return Err("restart markers missing or out of order");
                }
                restarts += 1;
                pos = j + 1;
            }
            Some(_) => return Ok((ff, restarts)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::damage;

    /// A minimal baseline JPEG's markers: 16x16 gray (2 x 2 MCUs), restart every MCU, entropy
    /// bytes with a stuffed 0xFF, and the three restart markers four intervals need.
    fn whole() -> Vec<u8> {
        let mut j = vec![0xFF, 0xD8];
        j.extend([0xFF, 0xE0, 0, 4, b'J', b'F']);
        j.extend([0xFF, 0xDD, 0, 4, 0, 1]);
        j.extend([0xFF, 0xC0, 0, 11, 8, 0, 16, 0, 16, 1, 1, 0x11, 0]);
        j.extend([0xFF, 0xDA, 0, 8, 1, 1, 0, 0, 63, 0]);
        j.extend([0x12, 0xFF, 0x00, 0x34, 0xFF, 0xD0, 0x56, 0xFF, 0xD1, 0x78, 0xFF, 0xD2, 0x9A]);
        j.extend([0xFF, 0xD9]);
        j
    }

    /// A cut or spliced JPEG decodes silently on every engine: each kind of damage the markers
    /// show must be found, and a whole picture must pass.
    #[test]
    fn damaged_markers_are_found_and_whole_pictures_pass() {
        let w = whole();
        assert_eq!(damage(&w), None);
        let mut padded = w.clone();
        padded.extend([0, 0, 0]);
        assert_eq!(damage(&padded), None, "bytes after the end-of-image marker (RTP padding)");
        for cut in [3, 10, 20, 30, 40, w.len() - 1] {
            assert!(damage(&w[..cut]).is_some(), "cut at {cut} of {}", w.len());
        }
        // A restart interval lost with its marker (bytes 43..46: 0x56 0xFF 0xD1).
        let mut lost = w.clone();
        lost.drain(43..46);
        assert_eq!(damage(&lost), Some("restart markers missing or out of order"));
        // A bare 0xFF in the entropy-coded data (its stuffing byte lost).
        let mut bare = w.clone();
        bare.remove(39);
        assert!(damage(&bare).is_some());
        // The last interval's marker lost: in order, but one short.
        let mut short = w.clone();
        short.drain(47..49);
        assert_eq!(damage(&short), Some("restart markers missing or out of order"));
        assert!(damage(&[0xFF, 0xD8, 0xFF, 0xD9]).is_some(), "no frame or scan");
        // A burst of one bits in a scan (nvJPEG's engine decodes it without an error): six
        // stuffed 0xFF bytes are no code; five, and six split by another byte, can be data.
        let scan = 37;
        for (run, split, found) in [(6, false, true), (16, false, true), (5, false, false), (6, true, false)] {
            let mut b = w.clone();
            let mut burst = [0xFF, 0x00].repeat(run);
            if split {
                burst.insert(2 * (run / 2), 0x12);
            }
            b.splice(scan..scan, burst);
            assert_eq!(damage(&b).is_some(), found, "{run} stuffed 0xFF bytes, split {split}: {:?}", damage(&b));
        }
        assert!(damage(b"not a jpeg").is_some());
    }
}
