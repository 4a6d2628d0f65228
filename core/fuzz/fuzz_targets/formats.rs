//! Reading a directory in any format never panics, the forward text of a
//! file keeps the file's line count and never holds a line of its down
//! section, and the sort keys order the files totally (a sort must not
//! find a cycle).
#![no_main]

use libfuzzer_sys::fuzz_target;
use strata_core::migrate::format::{Format, Input, detect, read};

fuzz_target!(|data: &[u8]| {
    // Files separated by a 0 byte; each is `name\ncontents`.
    let files: Vec<(&[u8], &[u8])> = data
        .split(|b| *b == 0)
        .map(|file| match file.iter().position(|b| *b == b'\n') {
            Some(at) => (&file[..at], &file[at + 1..]),
            None => (file, &[][..]),
        })
        .collect();
    let inputs: Vec<Input<'_>> = files
        .iter()
        .filter_map(|(name, bytes)| std::str::from_utf8(name).ok().map(|name| Input { name, bytes }))
        .collect();
    let _ = detect("d", &inputs);
    for format in Format::ALL {
        let Ok(mut read) = read("d", format, &inputs) else { continue };
        for file in &read {
            if let Ok(text) = std::str::from_utf8(&file.bytes) {
                assert_eq!(file.forward.text.split('\n').count(), text.split('\n').count());
            }
        }
        read.sort_by(|a, b| a.order.compare(&a.name, &b.order, &b.name));
    }
});
