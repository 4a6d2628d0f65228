//! Reading a directory in any format never panics, the forward text of a
//! file keeps the file's line count and never holds a line of its down
//! section, and the sort keys order the files totally (a sort must not
//! find a cycle).
#![no_main]

include!("../bodies/formats.rs");
