//! Certificates re-encoded the way an attacker would: the same subject, key and CA
//! signature in other bytes.

/// `der` (an Ed25519 certificate) with NULL parameters added to its outer signature
/// algorithm, which the CA's signature does not cover: a certificate whose bytes, and
/// any hash of them, differ from what its CA issued while its signature still verifies.
pub fn with_null_parameters(der: &[u8]) -> Vec<u8> {
    let body = sequence_body(der);
    let (tbs_header, tbs_body) = tlv(body);
    let tbs = &body[..tbs_header + tbs_body];
    let rest = &body[tbs.len()..];
    let ed25519 = [0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70];
    assert!(rest.starts_with(&ed25519), "an Ed25519 certificate");
    let mut reencoded = tbs.to_vec();
    reencoded.extend_from_slice(&[0x30, 0x07, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x05, 0x00]);
    reencoded.extend_from_slice(&rest[ed25519.len()..]);
    sequence(&reencoded)
}

/// The content of the DER SEQUENCE `der` (a certificate's: its signed part, signature
/// algorithm and signature).
pub fn sequence_body(der: &[u8]) -> &[u8] {
    assert_eq!(der.first(), Some(&0x30), "a SEQUENCE");
    let (header, len) = tlv(der);
    &der[header..header + len]
}

/// A DER SEQUENCE holding `body`, its length in the shortest form.
pub fn sequence(body: &[u8]) -> Vec<u8> {
    let mut out = vec![0x30];
    let len = body.len();
    if len < 0x80 {
        out.push(len as u8);
    } else if len < 0x100 {
        out.extend_from_slice(&[0x81, len as u8]);
    } else {
        out.extend_from_slice(&[0x82, (len >> 8) as u8, len as u8]);
    }
    out.extend_from_slice(body);
    out
}

/// The header length and the content length of the DER element at the start of `der`.
fn tlv(der: &[u8]) -> (usize, usize) {
    let first = usize::from(der[1]);
    if first < 0x80 {
        return (2, first);
    }
    let count = first & 0x7f;
    let len = der[2..2 + count]
        .iter()
        .fold(0usize, |len, byte| (len << 8) | usize::from(*byte));
    (2 + count, len)
}

/// `der` as a PEM `CERTIFICATE`, as certificate files hold it.
pub fn pem(der: &[u8]) -> String {
    use base64::Engine as _;
    let text = base64::engine::general_purpose::STANDARD.encode(der);
    let mut pem = String::from("-----BEGIN CERTIFICATE-----\n");
    for line in text.as_bytes().chunks(64) {
        pem.push_str(std::str::from_utf8(line).unwrap_or_default());
        pem.push('\n');
    }
    pem.push_str("-----END CERTIFICATE-----\n");
    pem
}
