//! The words both ends share when the server refuses a connection at a
//! limit: the server tells the client [`refusal_sentence`] (inside an
//! HTTP/2 GOAWAY, as it tells a plaintext client that it speaks TLS), and
//! the client library finds [`REFUSED_CONNECTION`] in the error to give the
//! user the sentence instead of "transport error". Kept here so the two
//! ends cannot drift apart.

use std::net::SocketAddr;

/// The part of the sentence that does not depend on the limit.
pub const REFUSED_CONNECTION: &str = "refused this connection:";

/// What the server at `addr` tells a client whose connection a limit
/// refused: `why` names the limit and what to do.
pub fn refusal_sentence(addr: SocketAddr, why: &str) -> String {
    format!("the server at {addr} {REFUSED_CONNECTION} {why}")
}

/// The sentence in `text` (an error's words), if it holds one: from "the
/// server at" to the quote that ends the GOAWAY's debug data as the error
/// shows it (`b"..."`), or to the end of the text. (Sentences hold no
/// quote.)
pub fn find_refusal(text: &str) -> Option<&str> {
    let marker = text.find(REFUSED_CONNECTION)?;
    let start = text[..marker].rfind("the server at ")?;
    let end = text[marker..]
        .find('"')
        .map_or(text.len(), |at| marker + at);
    Some(&text[start..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sentence_is_found_inside_an_error() {
        let addr: SocketAddr = "127.0.0.1:7420".parse().unwrap();
        let sentence = refusal_sentence(addr, "too many (LIMIT 3): close some");
        let shown = format!("connection error received: ENHANCE_YOUR_CALM (b\"{sentence}\")");
        assert_eq!(find_refusal(&shown), Some(sentence.as_str()));
        let debug = format!("GoAway(b\"{sentence}\", ENHANCE_YOUR_CALM, Remote) }}");
        assert_eq!(find_refusal(&debug), Some(sentence.as_str()));
        assert_eq!(find_refusal(&sentence), Some(sentence.as_str()));
        assert_eq!(find_refusal("transport error"), None);
    }
}
