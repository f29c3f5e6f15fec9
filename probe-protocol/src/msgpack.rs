//! The few MessagePack primitives the codec needs, written out so that every encoding choice is
//! explicit (smallest form for every integer) and every read is bounds-checked with the offset
//! of the failure.

use crate::DecodeError;

/// Deepest nesting `skip_value` follows; deeper input is rejected instead of recursing.
pub const MAX_DEPTH: usize = 32;

pub fn write_uint(out: &mut Vec<u8>, v: u64) {
    if v < 128 {
        out.push(v as u8);
    } else if v <= u8::MAX as u64 {
        out.extend_from_slice(&[0xcc, v as u8]);
    } else if v <= u16::MAX as u64 {
        out.push(0xcd);
        out.extend_from_slice(&(v as u16).to_be_bytes());
    } else if v <= u32::MAX as u64 {
        out.push(0xce);
        out.extend_from_slice(&(v as u32).to_be_bytes());
    } else {
        out.push(0xcf);
        out.extend_from_slice(&v.to_be_bytes());
    }
}

pub fn write_sint(out: &mut Vec<u8>, v: i64) {
    if v >= 0 {
        write_uint(out, v as u64);
    } else if v >= -32 {
        out.push(v as i8 as u8);
    } else if v >= i8::MIN as i64 {
        out.extend_from_slice(&[0xd0, v as i8 as u8]);
    } else if v >= i16::MIN as i64 {
        out.push(0xd1);
        out.extend_from_slice(&(v as i16).to_be_bytes());
    } else if v >= i32::MIN as i64 {
        out.push(0xd2);
        out.extend_from_slice(&(v as i32).to_be_bytes());
    } else {
        out.push(0xd3);
        out.extend_from_slice(&v.to_be_bytes());
    }
}

pub fn write_nil(out: &mut Vec<u8>) {
    out.push(0xc0);
}

pub fn write_bool(out: &mut Vec<u8>, v: bool) {
    out.push(if v { 0xc3 } else { 0xc2 });
}

pub fn write_array_len(out: &mut Vec<u8>, n: u32) {
    if n < 16 {
        out.push(0x90 | n as u8);
    } else if n <= u16::MAX as u32 {
        out.push(0xdc);
        out.extend_from_slice(&(n as u16).to_be_bytes());
    } else {
        out.push(0xdd);
        out.extend_from_slice(&n.to_be_bytes());
    }
}

pub fn write_map_len(out: &mut Vec<u8>, n: u32) {
    if n < 16 {
        out.push(0x80 | n as u8);
    } else if n <= u16::MAX as u32 {
        out.push(0xde);
        out.extend_from_slice(&(n as u16).to_be_bytes());
    } else {
        out.push(0xdf);
        out.extend_from_slice(&n.to_be_bytes());
    }
}

pub fn write_str(out: &mut Vec<u8>, s: &str) {
    let n = s.len();
    if n < 32 {
        out.push(0xa0 | n as u8);
    } else if n <= u8::MAX as usize {
        out.extend_from_slice(&[0xd9, n as u8]);
    } else if n <= u16::MAX as usize {
        out.push(0xda);
        out.extend_from_slice(&(n as u16).to_be_bytes());
    } else {
        out.push(0xdb);
        out.extend_from_slice(&(n as u32).to_be_bytes());
    }
    out.extend_from_slice(s.as_bytes());
}

pub fn write_opt_uint(out: &mut Vec<u8>, v: Option<u64>) {
    match v {
        Some(v) => write_uint(out, v),
        None => write_nil(out),
    }
}

/// A bounds-checked cursor over one frame body.
#[derive(Debug, Clone)]
pub struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    pub fn new(buf: &'a [u8]) -> Self {
        Reader { buf, pos: 0 }
    }

    pub fn pos(&self) -> usize {
        self.pos
    }

    pub fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    pub fn slice(&self, from: usize, to: usize) -> &'a [u8] {
        &self.buf[from.min(to)..to.min(self.buf.len())]
    }

    fn take(&mut self, n: usize, what: &'static str) -> Result<&'a [u8], DecodeError> {
        if self.remaining() < n {
            return Err(DecodeError::UnexpectedEnd {
                offset: self.pos,
                needed: n - self.remaining(),
                what,
            });
        }
        let s = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    fn byte(&mut self, what: &'static str) -> Result<u8, DecodeError> {
        Ok(self.take(1, what)?[0])
    }

    fn be(&mut self, n: usize, what: &'static str) -> Result<u64, DecodeError> {
        let b = self.take(n, what)?;
        Ok(b.iter().fold(0u64, |acc, &x| (acc << 8) | x as u64))
    }

    pub fn peek_marker(&self) -> Option<u8> {
        self.buf.get(self.pos).copied()
    }

    /// True (and consumed) when the next value is nil.
    pub fn take_nil(&mut self) -> bool {
        if self.peek_marker() == Some(0xc0) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn wrong(&self, at: usize, expected: &'static str, marker: u8) -> DecodeError {
        DecodeError::WrongType {
            offset: at,
            expected,
            marker,
        }
    }

    /// Any MessagePack integer, as i128 so that every encodable value fits.
    pub fn read_int(&mut self, what: &'static str) -> Result<i128, DecodeError> {
        let at = self.pos;
        let m = self.byte(what)?;
        Ok(match m {
            0x00..=0x7f => m as i128,
            0xe0..=0xff => (m as i8) as i128,
            0xcc => self.be(1, what)? as i128,
            0xcd => self.be(2, what)? as i128,
            0xce => self.be(4, what)? as i128,
            0xcf => self.be(8, what)? as i128,
            0xd0 => (self.be(1, what)? as u8 as i8) as i128,
            0xd1 => (self.be(2, what)? as u16 as i16) as i128,
            0xd2 => (self.be(4, what)? as u32 as i32) as i128,
            0xd3 => (self.be(8, what)? as i64) as i128,
            _ => return Err(self.wrong(at, "an integer", m)),
        })
    }

    pub fn read_u64(&mut self, what: &'static str) -> Result<u64, DecodeError> {
        let at = self.pos;
        let v = self.read_int(what)?;
        u64::try_from(v).map_err(|_| DecodeError::OutOfRange {
            offset: at,
            what,
            value: v,
        })
    }

    pub fn read_u32(&mut self, what: &'static str) -> Result<u32, DecodeError> {
        let at = self.pos;
        let v = self.read_int(what)?;
        u32::try_from(v).map_err(|_| DecodeError::OutOfRange {
            offset: at,
            what,
            value: v,
        })
    }

    pub fn read_i64(&mut self, what: &'static str) -> Result<i64, DecodeError> {
        let at = self.pos;
        let v = self.read_int(what)?;
        i64::try_from(v).map_err(|_| DecodeError::OutOfRange {
            offset: at,
            what,
            value: v,
        })
    }

    pub fn read_opt_u64(&mut self, what: &'static str) -> Result<Option<u64>, DecodeError> {
        if self.take_nil() {
            Ok(None)
        } else {
            self.read_u64(what).map(Some)
        }
    }

    pub fn read_opt_u32(&mut self, what: &'static str) -> Result<Option<u32>, DecodeError> {
        if self.take_nil() {
            Ok(None)
        } else {
            self.read_u32(what).map(Some)
        }
    }

    pub fn read_bool(&mut self, what: &'static str) -> Result<bool, DecodeError> {
        let at = self.pos;
        match self.byte(what)? {
            0xc2 => Ok(false),
            0xc3 => Ok(true),
            m => Err(self.wrong(at, "a boolean", m)),
        }
    }

    pub fn read_array_len(&mut self, what: &'static str) -> Result<usize, DecodeError> {
        let at = self.pos;
        let m = self.byte(what)?;
        Ok(match m {
            0x90..=0x9f => (m & 0x0f) as usize,
            0xdc => self.be(2, what)? as usize,
            0xdd => self.be(4, what)? as usize,
            _ => return Err(self.wrong(at, "an array", m)),
        })
    }

    pub fn read_map_len(&mut self, what: &'static str) -> Result<usize, DecodeError> {
        let at = self.pos;
        let m = self.byte(what)?;
        Ok(match m {
            0x80..=0x8f => (m & 0x0f) as usize,
            0xde => self.be(2, what)? as usize,
            0xdf => self.be(4, what)? as usize,
            _ => return Err(self.wrong(at, "a map", m)),
        })
    }

    pub fn read_str(&mut self, what: &'static str) -> Result<&'a str, DecodeError> {
        let at = self.pos;
        let m = self.byte(what)?;
        let n = match m {
            0xa0..=0xbf => (m & 0x1f) as usize,
            0xd9 => self.be(1, what)? as usize,
            0xda => self.be(2, what)? as usize,
            0xdb => self.be(4, what)? as usize,
            _ => return Err(self.wrong(at, "a string", m)),
        };
        let start = self.pos;
        let bytes = self.take(n, what)?;
        std::str::from_utf8(bytes).map_err(|_| DecodeError::InvalidUtf8 { offset: start })
    }

    pub fn read_opt_str(&mut self, what: &'static str) -> Result<Option<&'a str>, DecodeError> {
        if self.take_nil() {
            Ok(None)
        } else {
            self.read_str(what).map(Some)
        }
    }

    /// Skip one complete value of any type (used for unknown events and trailing fields).
    pub fn skip_value(&mut self, depth: usize) -> Result<(), DecodeError> {
        if depth > MAX_DEPTH {
            return Err(DecodeError::TooDeep {
                offset: self.pos,
                limit: MAX_DEPTH,
            });
        }
        const W: &str = "a value";
        let at = self.pos;
        let m = self.byte(W)?;
        let (skip, items) = match m {
            0x00..=0x7f | 0xe0..=0xff | 0xc0 | 0xc2 | 0xc3 => (0, 0),
            0x80..=0x8f => (0, 2 * (m & 0x0f) as u64),
            0x90..=0x9f => (0, (m & 0x0f) as u64),
            0xa0..=0xbf => ((m & 0x1f) as u64, 0),
            0xcc | 0xd0 => (1, 0),
            0xcd | 0xd1 => (2, 0),
            0xce | 0xd2 | 0xca => (4, 0),
            0xcf | 0xd3 | 0xcb => (8, 0),
            0xc4 | 0xd9 => (self.be(1, W)?, 0),
            0xc5 | 0xda => (self.be(2, W)?, 0),
            0xc6 | 0xdb => (self.be(4, W)?, 0),
            0xd4 => (2, 0),
            0xd5 => (3, 0),
            0xd6 => (5, 0),
            0xd7 => (9, 0),
            0xd8 => (17, 0),
            0xc7 => (self.be(1, W)? + 1, 0),
            0xc8 => (self.be(2, W)? + 1, 0),
            0xc9 => (self.be(4, W)? + 1, 0),
            0xdc => (0, self.be(2, W)?),
            0xdd => (0, self.be(4, W)?),
            0xde => (0, 2 * self.be(2, W)?),
            0xdf => (0, 2 * self.be(4, W)?),
            0xc1 => return Err(self.wrong(at, "a value (0xc1 is never used)", m)),
        };
        self.take(skip as usize, W)?;
        for _ in 0..items {
            self.skip_value(depth + 1)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_use_the_smallest_form_and_read_back() {
        let cases: &[(i64, usize)] = &[
            (0, 1),
            (127, 1),
            (128, 2),
            (255, 2),
            (256, 3),
            (65_535, 3),
            (65_536, 5),
            (u32::MAX as i64, 5),
            (1 << 40, 9),
            (-1, 1),
            (-32, 1),
            (-33, 2),
            (-128, 2),
            (-129, 3),
            (-40_000, 5),
            (i64::MIN, 9),
        ];
        for &(v, len) in cases {
            let mut out = Vec::new();
            write_sint(&mut out, v);
            assert_eq!(out.len(), len, "length of {v}");
            let mut r = Reader::new(&out);
            assert_eq!(r.read_int("v").unwrap(), v as i128);
            assert_eq!(r.remaining(), 0);
        }
    }

    #[test]
    fn truncated_string_reports_offset_and_need() {
        let mut out = Vec::new();
        write_str(&mut out, "hello");
        let mut r = Reader::new(&out[..4]);
        assert_eq!(
            r.read_str("name"),
            Err(DecodeError::UnexpectedEnd {
                offset: 1,
                needed: 2,
                what: "name"
            })
        );
    }

    #[test]
    fn deep_nesting_is_refused_not_recursed() {
        let bytes = vec![0x91u8; 10_000];
        let mut r = Reader::new(&bytes);
        assert!(matches!(r.skip_value(0), Err(DecodeError::TooDeep { .. })));
    }
}
