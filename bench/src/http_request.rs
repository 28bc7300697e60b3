//! The one reader of a whole HTTP/1.1 request for the bench's small
//! loopback endpoints (the self-test's hybrid probe, `bench faults`' webhook
//! sink). Written by hand: they need only "has the request arrived, and
//! where is its body", which no HTTP crate offers without a server around it.

use std::ops::Range;

/// Where the body lies in `buf` once `buf` holds a whole request (headers
/// ended by a blank line, then `content-length` bytes; no header means no
/// body); None while more bytes are needed.
pub fn complete_body(buf: &[u8]) -> Option<Range<usize>> {
    let end = buf.windows(4).position(|w| w == b"\r\n\r\n")?;
    let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
    let len = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .and_then(|v| v.trim().parse::<usize>().ok())
        .unwrap_or(0);
    let body = end + 4..end + 4 + len;
    (buf.len() >= body.end).then_some(body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_is_complete_only_with_its_whole_body() {
        let whole = b"POST / HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello";
        assert_eq!(complete_body(whole), Some(38..43));
        assert_eq!(&whole[complete_body(whole).unwrap()], b"hello");
        assert_eq!(complete_body(&whole[..40]), None);
        assert_eq!(complete_body(b"POST / HTTP/1.1\r\nContent-Len"), None);
        let bodiless = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n";
        assert_eq!(complete_body(bodiless), Some(27..27));
    }
}
