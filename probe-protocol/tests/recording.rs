mod common;
use probe_protocol::*;

fn recording(frames: &[Vec<u8>]) -> Vec<u8> {
    let mut w = RecordingWriter::new(Vec::new()).unwrap();
    for f in frames {
        w.write_frame(f).unwrap();
    }
    w.into_inner()
}

fn frames() -> Vec<Vec<u8>> {
    common::one_of_each()
        .chunks(5)
        .map(|c| encode_frame(0, c).unwrap())
        .collect()
}

#[test]
fn a_recording_is_the_header_then_the_socket_frames() {
    let fs = frames();
    let file = recording(&fs);
    assert_eq!(&file[..8], &RECORDING_MAGIC);
    assert_eq!(&file[8..12], &[1, 0, 0, 0]);
    assert_eq!(&file[12..], fs.concat().as_slice());
    let r = read_all(&file[..]).unwrap();
    let (decoded, errors, trunc) = (r.frames, r.errors, r.truncation);
    assert!(errors.is_empty() && trunc.is_none());
    let events: Vec<_> = decoded.into_iter().flat_map(|f| f.events).collect();
    assert_eq!(events, common::one_of_each());
}

#[test]
fn truncated_file_returns_every_complete_frame_and_says_where_it_was_cut() {
    let fs = frames();
    let file = recording(&fs);
    let complete: usize = 12 + fs[0].len() + fs[1].len();
    for cut in [
        complete + 1,
        complete + 3,
        complete + 4,
        complete + 10,
        file.len() - 1,
    ] {
        let r = read_all(&file[..cut]).unwrap();
        let (decoded, errors, trunc) = (r.frames, r.errors, r.truncation);
        assert!(errors.is_empty());
        let t = trunc.expect("truncation reported");
        // Every frame that ends at or before the cut is whole; the next one starts the cut.
        let mut start = 12;
        let mut expect_frames = 0;
        while expect_frames < fs.len() && start + fs[expect_frames].len() <= cut {
            start += fs[expect_frames].len();
            expect_frames += 1;
        }
        assert!(expect_frames >= 2, "cut at {cut}");
        assert_eq!(decoded.len(), expect_frames, "cut at {cut}");
        assert_eq!(t.offset, start as u64);
        assert_eq!(t.available, cut - start);
        if cut - start >= 4 {
            assert_eq!(t.needed, Some(fs[expect_frames].len()));
        } else {
            assert_eq!(t.needed, None);
        }
        assert!(t.to_string().contains(&format!("byte {start}")));
    }
}

#[test]
fn a_corrupt_frame_is_reported_and_reading_goes_on() {
    let fs = frames();
    let mut file = recording(&fs);
    // Corrupt the first event tag of the second frame (after prefix and header fields).
    let at = 12 + fs[0].len() + 4 + 5 + 3;
    file[at + 1] = 0xc1;
    let r = read_all(&file[..]).unwrap();
    let (decoded, errors, trunc) = (r.frames, r.errors, r.truncation);
    assert_eq!(decoded.len(), fs.len() - 1);
    assert_eq!(errors.len(), 1);
    assert_eq!(errors[0].offset, (12 + fs[0].len()) as u64);
    assert!(!errors[0].is_fatal());
    assert!(trunc.is_none());
}

#[test]
fn not_a_recording_is_a_clear_error() {
    let err = read_all(&b"hello world, not a recording"[..]).unwrap_err();
    assert!(
        err.to_string().contains("not a proofscope recording"),
        "{err}"
    );
    let mut future = RECORDING_MAGIC.to_vec();
    future.extend_from_slice(&[9, 0, 0, 0]);
    let err = read_all(&future[..]).unwrap_err();
    assert!(err.to_string().contains("version 9"), "{err}");
}
