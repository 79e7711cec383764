//! Redis's CRC-64 (crc64.c): the "Jones" polynomial 0xad93d23594c935a9,
//! reflected input and output, initial value 0, no final xor. It seals every
//! DUMP and FUNCTION DUMP payload; RESTORE refuses a payload whose last eight
//! bytes are not this checksum of everything before them.

/// The reflected polynomial, for the LSB-first table below.
const POLY_REFLECTED: u64 = 0x95ac_9329_ac4b_c9b5;

/// One entry per byte value, built at compile time.
const TABLE: [u64; 256] = {
    let mut table = [0u64; 256];
    let mut i = 0;
    while i < 256 {
        let mut crc = i as u64;
        let mut bit = 0;
        while bit < 8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ POLY_REFLECTED
            } else {
                crc >> 1
            };
            bit += 1;
        }
        table[i] = crc;
        i += 1;
    }
    table
};

/// `crc64(crc, s, l)`: continue `crc` over `bytes`.
pub(crate) fn crc64(mut crc: u64, bytes: &[u8]) -> u64 {
    for &b in bytes {
        crc = TABLE[((crc ^ u64::from(b)) & 0xff) as usize] ^ (crc >> 8);
    }
    crc
}

#[cfg(test)]
mod tests {
    use super::crc64;

    #[test]
    fn matches_crc64_c_test_vector() {
        // crc64.c's own test: crc64(0, "123456789", 9) == 0xe9c6d914c4b8d9ca.
        assert_eq!(crc64(0, b"123456789"), 0xe9c6_d914_c4b8_d9ca);
        let whole = crc64(0, b"123456789");
        assert_eq!(crc64(crc64(0, b"1234"), b"56789"), whole);
    }
}
