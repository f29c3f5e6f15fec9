//! docs/PROTOCOL.md, sections 5 and 9, rule by rule: each test builds the bytes the rule is
//! about by hand (MessagePack written out below) and checks what the reader does.

use probe_protocol::*;

/// A frame body `[1, 0, base, events…]` from raw MessagePack events.
fn body(base: u8, events: &[&[u8]]) -> Vec<u8> {
    let mut b = vec![0xdd, 0, 0, 0, 3 + events.len() as u8, 0x01, 0x00, base];
    for e in events {
        b.extend_from_slice(e);
    }
    b
}

fn err(b: &[u8]) -> DecodeError {
    decode_frame(b).expect_err("the frame must be rejected")
}

/// `[15, dt=1]`: a Heartbeat.
const HEARTBEAT: &[u8] = &[0x92, 0x0f, 0x01];

#[test]
fn a_frame_is_rejected_whole() {
    // A good heartbeat, then a SpanEnd missing its dt.
    let b = body(0, &[HEARTBEAT, &[0x92, 0x07, 0x01]]);
    let mut out = vec![Event::Heartbeat { ts: 99 }];
    assert!(decode_into(&b, &mut out).is_err());
    assert_eq!(
        out,
        vec![Event::Heartbeat { ts: 99 }],
        "nothing of the frame is kept"
    );
}

#[test]
fn a_float_where_an_integer_is_listed_is_an_error() {
    // Heartbeat with dt as float32 1.0.
    let e = err(&body(0, &[&[0x92, 0x0f, 0xca, 0x3f, 0x80, 0, 0]]));
    assert!(matches!(e, DecodeError::WrongType { .. }), "{e}");
}

#[test]
fn a_bin_where_a_string_is_listed_is_an_error() {
    // NameDef [2, 1, bin8 "ab"].
    let e = err(&body(0, &[&[0x93, 0x02, 0x01, 0xc4, 0x02, b'a', b'b']]));
    assert!(matches!(e, DecodeError::WrongType { .. }), "{e}");
}

#[test]
fn nil_in_a_field_not_marked_optional_is_an_error() {
    // SpanEnd [7, nil, 1]: dspan is not optional.
    let e = err(&body(0, &[&[0x93, 0x07, 0xc0, 0x01]]));
    assert!(matches!(e, DecodeError::WrongType { .. }), "{e}");
}

#[test]
fn invalid_utf8_is_an_error() {
    // NameDef [2, 1, fixstr 0xff 0xfe].
    let e = err(&body(0, &[&[0x93, 0x02, 0x01, 0xa2, 0xff, 0xfe]]));
    assert!(matches!(e, DecodeError::InvalidUtf8 { .. }), "{e}");
}

#[test]
fn too_few_fields_counts_the_fields_after_the_tag() {
    // ThreadDef [3, 1, "t"]: two fields, three needed.
    let e = err(&body(0, &[&[0x93, 0x03, 0x01, 0xa1, b't']]));
    assert!(
        e.to_string()
            .contains("has 2 field(s) after its tag, needs at least 3"),
        "{e}"
    );
}

#[test]
fn an_empty_event_array_is_an_error() {
    let e = err(&body(0, &[&[0x90]]));
    assert!(
        e.to_string().contains("an event starts with its tag"),
        "{e}"
    );
}

#[test]
fn a_body_of_fewer_than_three_elements_is_an_error() {
    let e = err(&[0x92, 0x01, 0x00]);
    assert!(matches!(e, DecodeError::MissingFields { .. }), "{e}");
}

#[test]
fn bytes_after_the_last_event_are_an_error() {
    let mut b = body(0, &[HEARTBEAT]);
    b.push(0x00);
    assert!(matches!(err(&b), DecodeError::TrailingBytes { .. }));
}

#[test]
fn nesting_deeper_than_the_limit_is_an_error() {
    // An unknown kind whose payload nests 40 arrays: skipped values still obey the limit.
    let mut ev = vec![0x92, 0x63];
    ev.extend(std::iter::repeat_n(0x91, 40));
    ev.push(0x00);
    let e = err(&body(0, &[&ev]));
    assert!(matches!(e, DecodeError::TooDeep { .. }), "{e}");
}

#[test]
fn a_timestamp_past_2_63_is_an_error() {
    // Heartbeat dt = 2^63 (uint64) from base 0.
    let e = err(&body(0, &[&[0x92, 0x0f, 0xcf, 0x80, 0, 0, 0, 0, 0, 0, 0]]));
    assert!(matches!(e, DecodeError::OutOfRange { .. }), "{e}");
}

#[test]
fn a_parent_of_zero_is_an_error() {
    // SpanBegin [6, dspan 5, parent d 5 → 0, nil, name 1, thread 1, dt 0].
    let e = err(&body(
        0,
        &[&[0x97, 0x06, 0x05, 0x05, 0xc0, 0x01, 0x01, 0x00]],
    ));
    assert!(matches!(e, DecodeError::OutOfRange { .. }), "{e}");
    // … while d 4 (parent 1) is fine.
    let f = decode_frame(&body(
        0,
        &[&[0x97, 0x06, 0x05, 0x04, 0xc0, 0x01, 0x01, 0x00]],
    ))
    .unwrap();
    assert!(matches!(&f.events[0], Event::SpanBegin(b) if b.parent == Some(1)));
}

#[test]
fn unknown_tags_are_skipped_and_extra_elements_and_keys_ignored() {
    // [99, {"x": [1, 2]}], a heartbeat with a trailing field, a ProofEnd map with an extra key.
    let unknown: &[u8] = &[0x92, 0x63, 0x81, 0xa1, b'x', 0x92, 0x01, 0x02];
    let longer: &[u8] = &[0x93, 0x0f, 0x01, 0xa3, b'n', b'e', b'w'];
    let mut proof_end = vec![0x93, 0x05, 0x00, 0x82, 0xa5];
    proof_end.extend_from_slice(b"proof");
    proof_end.push(0x07);
    proof_end.push(0xa5);
    proof_end.extend_from_slice(b"extra");
    proof_end.push(0x01);
    let f = decode_frame(&body(0, &[unknown, longer, &proof_end])).unwrap();
    assert_eq!(f.skipped_unknown, 1);
    assert_eq!(f.events[0], Event::Heartbeat { ts: 1 });
    assert!(matches!(&f.events[1], Event::ProofEnd(p) if p.proof == 7 && p.ts == 1));
}

#[test]
fn dropped_counts_are_a_map_with_integer_keys() {
    // Dropped [14, dt 0, {6: 3, 7: 2}].
    let f = decode_frame(&body(
        0,
        &[&[0x93, 0x0e, 0x00, 0x82, 0x06, 0x03, 0x07, 0x02]],
    ))
    .unwrap();
    let Event::Dropped(d) = &f.events[0] else {
        panic!("{:?}", f.events)
    };
    assert_eq!(
        d.counts,
        vec![(EventKind::SpanBegin, 3), (EventKind::SpanEnd, 2)]
    );
}

#[test]
fn another_major_version_is_an_error_naming_both() {
    let mut b = body(0, &[HEARTBEAT]);
    b[5] = 0x02;
    let e = err(&b);
    assert!(
        e.to_string().contains(&format!(
            "this build speaks {}, the peer sent 2.0",
            protocol_version()
        )),
        "{e}"
    );
}

fn header(flags: u16) -> Vec<u8> {
    let mut h = RECORDING_MAGIC.to_vec();
    h.extend_from_slice(&RECORDING_VERSION.to_le_bytes());
    h.extend_from_slice(&flags.to_le_bytes());
    h
}

fn open_err(bytes: &[u8]) -> String {
    match RecordingReader::new(bytes) {
        Ok(_) => panic!("must not open"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn short_files_and_unknown_flags_are_named() {
    assert_eq!(
        open_err(&[]),
        "empty recording (the writer stopped before its header)"
    );
    assert!(open_err(&RECORDING_MAGIC[..5]).contains("not a proofscope recording"));
    assert!(open_err(&header(0)[..10]).contains("recording header"));
    assert!(open_err(&header(2)).contains("flags 0x0002"));
    assert!(RecordingReader::new(&header(0)[..]).is_ok());
}

#[test]
fn a_length_prefix_cut_in_two_is_a_truncation_not_a_frame() {
    let mut file = header(0);
    file.extend(encode_frame(0, &[Event::Heartbeat { ts: 3 }]).unwrap());
    file.extend_from_slice(&[0x05, 0x00]);
    let r = read_all(&file[..]).unwrap();
    assert_eq!(r.frames.len(), 1);
    let t = r.truncation.expect("the cut is reported");
    assert_eq!((t.needed, t.available), (None, 2));
}

#[test]
fn a_recording_may_hold_a_subscribe_which_readers_pass_over() {
    let mut file = header(0);
    let sub = Event::Subscribe(Subscribe {
        history: true,
        client: "x".into(),
    });
    file.extend(encode_frame(0, &[sub.clone(), Event::Heartbeat { ts: 1 }]).unwrap());
    let r = read_all(&file[..]).unwrap();
    assert!(r.errors.is_empty());
    assert_eq!(r.frames[0].events, vec![sub, Event::Heartbeat { ts: 1 }]);
}

/// §4, StackDef: `0xHEX` (lowercase, no leading zeros), or a non-empty `FUNCTION` with an
/// optional trailing ` (FILE:LINE)`, the line a decimal ≥ 1. `0x0` is accepted only as the
/// last frame, from recordings made before the probe stopped sending it.
fn frame_form(frame: &str, last: bool) -> Result<(), String> {
    if let Some(hex) = frame.strip_prefix("0x") {
        let ok = !hex.is_empty()
            && hex
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
            && (!hex.starts_with('0') || (hex == "0" && last));
        return ok
            .then_some(())
            .ok_or(format!("bad address frame {frame:?}"));
    }
    let (function, location) = match frame.strip_suffix(')').and_then(|f| f.rsplit_once(" (")) {
        Some((func, loc))
            if loc
                .rsplit_once(':')
                .is_some_and(|(_, l)| l.parse::<u32>().is_ok()) =>
        {
            (func, Some(loc))
        }
        _ => (frame, None),
    };
    if function.trim().is_empty() {
        return Err(format!("no function in {frame:?}"));
    }
    if let Some(loc) = location {
        let (file, line) = loc.rsplit_once(':').unwrap_or_default();
        if file.is_empty() || line.parse::<u32>().map_or(true, |l| l == 0) {
            return Err(format!("bad location in {frame:?}"));
        }
    }
    Ok(())
}

#[test]
fn every_stack_frame_of_every_recording_is_one_of_the_two_forms() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../recordings");
    let mut frames = 0;
    let mut located = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "psrec") {
            continue;
        }
        let file = std::fs::File::open(&path).unwrap();
        let mut r = RecordingReader::new(std::io::BufReader::new(file)).unwrap();
        while let Ok(Some(f)) = r.next_frame() {
            for e in &f.events {
                let Event::StackDef { id, frames: fs } = e else {
                    continue;
                };
                assert!(
                    !fs.is_empty(),
                    "{}: stack {id} has no frame",
                    path.display()
                );
                for (i, fr) in fs.iter().enumerate() {
                    frame_form(fr, i + 1 == fs.len())
                        .unwrap_or_else(|e| panic!("{}: stack {id}: {e}", path.display()));
                    frames += 1;
                    located += usize::from(fr.ends_with(')') && !fr.starts_with("0x"));
                }
            }
        }
    }
    // Both forms are there: stripped binaries' bare names and line-tabled ones.
    assert!(frames > 100, "{frames} frames");
    assert!(
        located > 0 && located < frames,
        "{located} of {frames} with a location"
    );
}

#[test]
fn the_two_frame_forms_and_what_is_not_a_frame() {
    for ok in [
        "prover_core::groth16::params::random_g1",
        "`vector<Scalar, allocator<Scalar> >::~vector()` (stl_vector.h:733)",
        "Assignment::~Assignment() (c2.cpp:120)",
        "0x7f503c02a1ca",
        "std::rt::lang_start::{{closure}}",
    ] {
        assert_eq!(frame_form(ok, false), Ok(()), "{ok}");
    }
    assert_eq!(
        frame_form("0x0", true),
        Ok(()),
        "the old end-of-stack marker, last only"
    );
    for bad in [
        "",
        "0x",
        "0x0",
        "0x00ff",
        "0xABC",
        " (c2.cpp:0)",
        "f (c2.cpp:0)",
    ] {
        assert!(frame_form(bad, false).is_err(), "{bad:?}");
    }
}
