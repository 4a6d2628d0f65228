// The body of the fuzz target `formats` (fuzz_targets/formats.rs includes it), also run
// over its seeds and generated inputs in every test build (core/tests/fuzz_targets.rs).

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
