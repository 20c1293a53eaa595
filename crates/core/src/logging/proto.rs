//! The few pieces of the protobuf wire format that event files need, written by hand so that no
//! protobuf crate (nor `protoc`) is required.

/// Wire type of variable-length integers.
pub(crate) const VARINT: u8 = 0;
/// Wire type of 8-byte little-endian values (`double`).
pub(crate) const FIXED64: u8 = 1;
/// Wire type of length-delimited values (strings, bytes, messages).
pub(crate) const LEN: u8 = 2;
/// Wire type of 4-byte little-endian values (`float`).
pub(crate) const FIXED32: u8 = 5;

/// Appends `v` as a base-128 varint.
pub(crate) fn put_varint(buf: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        buf.push((v as u8 & 0x7F) | 0x80);
        v >>= 7;
    }
    buf.push(v as u8);
}

/// Appends the key of field `field` with wire type `wire`.
pub(crate) fn put_key(buf: &mut Vec<u8>, field: u32, wire: u8) {
    put_varint(buf, (u64::from(field) << 3) | u64::from(wire));
}

/// Appends a varint field.
pub(crate) fn put_uint(buf: &mut Vec<u8>, field: u32, v: u64) {
    put_key(buf, field, VARINT);
    put_varint(buf, v);
}

/// Appends a length-delimited field.
pub(crate) fn put_bytes(buf: &mut Vec<u8>, field: u32, bytes: &[u8]) {
    put_key(buf, field, LEN);
    put_varint(buf, bytes.len() as u64);
    buf.extend_from_slice(bytes);
}

/// Appends a `double` field.
pub(crate) fn put_f64(buf: &mut Vec<u8>, field: u32, v: f64) {
    put_key(buf, field, FIXED64);
    buf.extend_from_slice(&v.to_le_bytes());
}

/// Appends a `float` field.
pub(crate) fn put_f32(buf: &mut Vec<u8>, field: u32, v: f32) {
    put_key(buf, field, FIXED32);
    buf.extend_from_slice(&v.to_le_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    fn varint(v: u64) -> Vec<u8> {
        let mut buf = Vec::new();
        put_varint(&mut buf, v);
        buf
    }

    #[test]
    fn varints_use_seven_bits_per_byte() {
        assert_eq!(varint(0), [0x00]);
        assert_eq!(varint(1), [0x01]);
        assert_eq!(varint(127), [0x7F]);
        assert_eq!(varint(128), [0x80, 0x01]);
        assert_eq!(varint(300), [0xAC, 0x02]);
        assert_eq!(varint(u64::MAX).len(), 10);
        assert_eq!(*varint(u64::MAX).last().unwrap(), 0x01);
    }

    #[test]
    fn keys_combine_field_and_wire_type() {
        let mut buf = Vec::new();
        put_f64(&mut buf, 1, 1.5);
        put_uint(&mut buf, 2, 3);
        put_bytes(&mut buf, 3, b"ab");
        put_f32(&mut buf, 2, 0.25);
        assert_eq!(
            buf,
            [
                0x09, 0, 0, 0, 0, 0, 0, 0xF8, 0x3F, // 1: double 1.5
                0x10, 0x03, // 2: varint 3
                0x1A, 0x02, b'a', b'b', // 3: "ab"
                0x15, 0, 0, 0x80, 0x3E, // 2: float 0.25
            ]
        );
    }
}
