//! TensorBoard event files, written without a protobuf library: each record is a hand-encoded
//! `Event` message in TFRecord framing (length, masked CRC32C of the length, payload, masked
//! CRC32C of the payload).

use std::fs::{self, File, OpenOptions};
use std::io::{self, BufWriter, ErrorKind, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use super::crc32c::masked_crc32c;
use super::proto::{put_bytes, put_f32, put_f64, put_uint};
use crate::{Error, Result};

/// Makes file names unique within the process when writers are created in the same second.
static FILE_COUNTER: AtomicU64 = AtomicU64::new(0);

/// How many names to try when a file of the chosen name already exists (another process).
const NAME_ATTEMPTS: u32 = 64;

/// Appends scalars to a new TensorBoard event file.
///
/// Records are buffered: call [`EventWriter::flush`] to make them visible to readers and to
/// learn of write errors (dropping the writer flushes too, but silently).
#[derive(Debug)]
pub struct EventWriter {
    path: PathBuf,
    out: BufWriter<File>,
}

impl EventWriter {
    /// Creates `logdir` if needed and a new event file in it,
    /// `events.out.tfevents.<unix_secs>.<hostname>.<pid>.<n>`, starting with the
    /// `brain.Event:2` version record (written through at once).
    ///
    /// # Errors
    /// [`Error::Io`] if the directory or the file cannot be created or written.
    pub fn create(logdir: &Path) -> Result<EventWriter> {
        fs::create_dir_all(logdir).map_err(|e| Error::io(logdir, e))?;
        let secs = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let host = hostname();
        let pid = std::process::id();
        let mut attempt = 0;
        let (path, file) = loop {
            let n = FILE_COUNTER.fetch_add(1, Ordering::Relaxed);
            let path = logdir.join(format!("events.out.tfevents.{secs}.{host}.{pid}.{n}"));
            match OpenOptions::new().write(true).create_new(true).open(&path) {
                Ok(file) => break (path, file),
                Err(e) if e.kind() == ErrorKind::AlreadyExists && attempt < NAME_ATTEMPTS => {
                    attempt += 1;
                }
                Err(e) => return Err(Error::io(&path, e)),
            }
        };
        let mut writer = EventWriter {
            path,
            out: BufWriter::new(file),
        };
        writer.write_event(&encode_file_version(now()))?;
        writer.flush()?;
        Ok(writer)
    }

    /// Appends the scalar `value` (stored as an `f32` `simple_value`) for `tag` at `step`,
    /// stamped with the current time.
    ///
    /// # Errors
    /// [`Error::Io`] if writing fails.
    pub fn add_scalar(&mut self, tag: &str, value: f64, step: u64) -> Result<()> {
        self.write_event(&encode_scalar(now(), step, tag, value as f32))
    }

    /// Hands every buffered record to the operating system.
    ///
    /// # Errors
    /// [`Error::Io`] if writing fails.
    pub fn flush(&mut self) -> Result<()> {
        self.out.flush().map_err(|e| Error::io(&self.path, e))
    }

    /// The event file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn write_event(&mut self, event: &[u8]) -> Result<()> {
        write_record(&mut self.out, event).map_err(|e| Error::io(&self.path, e))
    }
}

/// Seconds since the Unix epoch, as TensorBoard's `wall_time`.
fn now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// The host name for the file name (as Python's `socket.gethostname()`), kept to characters
/// that are safe in a file name.
fn hostname() -> String {
    let raw = fs::read_to_string("/proc/sys/kernel/hostname")
        .or_else(|_| fs::read_to_string("/etc/hostname"))
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_default();
    let clean: String = raw
        .trim()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "-_.".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect();
    if clean.is_empty() {
        "localhost".to_string()
    } else {
        clean
    }
}

/// Writes `payload` as one TFRecord.
fn write_record(out: &mut impl Write, payload: &[u8]) -> io::Result<()> {
    let len = (payload.len() as u64).to_le_bytes();
    out.write_all(&len)?;
    out.write_all(&masked_crc32c(&len).to_le_bytes())?;
    out.write_all(payload)?;
    out.write_all(&masked_crc32c(payload).to_le_bytes())
}

// Field numbers of tensorflow/core/util/event.proto and framework/summary.proto.
const EVENT_WALL_TIME: u32 = 1;
const EVENT_STEP: u32 = 2;
const EVENT_FILE_VERSION: u32 = 3;
const EVENT_SUMMARY: u32 = 5;
const SUMMARY_VALUE: u32 = 1;
const VALUE_TAG: u32 = 1;
const VALUE_SIMPLE_VALUE: u32 = 2;

/// `Event{wall_time, file_version: "brain.Event:2"}`.
fn encode_file_version(wall_time: f64) -> Vec<u8> {
    let mut event = Vec::with_capacity(32);
    put_f64(&mut event, EVENT_WALL_TIME, wall_time);
    put_bytes(&mut event, EVENT_FILE_VERSION, b"brain.Event:2");
    event
}

/// `Event{wall_time, step, summary{value[{tag, simple_value}]}}`.
fn encode_scalar(wall_time: f64, step: u64, tag: &str, value: f32) -> Vec<u8> {
    let mut summary_value = Vec::with_capacity(tag.len() + 8);
    put_bytes(&mut summary_value, VALUE_TAG, tag.as_bytes());
    put_f32(&mut summary_value, VALUE_SIMPLE_VALUE, value);
    let mut summary = Vec::with_capacity(summary_value.len() + 4);
    put_bytes(&mut summary, SUMMARY_VALUE, &summary_value);
    let mut event = Vec::with_capacity(summary.len() + 24);
    put_f64(&mut event, EVENT_WALL_TIME, wall_time);
    // proto3 leaves fields at their default out; readers take a missing step as 0.
    if step != 0 {
        put_uint(&mut event, EVENT_STEP, step);
    }
    put_bytes(&mut event, EVENT_SUMMARY, &summary);
    event
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::logging::crc32c::crc32c;

    fn hex(bytes: &[u8]) -> String {
        bytes.iter().map(|b| format!("{b:02x}")).collect()
    }

    /// Bytes written by the `tensorboard` 2.21 Python package (`Event(...).SerializeToString()`
    /// and `RecordWriter.write`) for the same events.
    #[test]
    fn encodings_match_the_python_protobuf() {
        assert_eq!(
            hex(&encode_scalar(1.5, 3, "loss", 0.25)),
            "09000000000000f83f10032a0d0a0b0a046c6f7373150000803e"
        );
        assert_eq!(
            hex(&encode_file_version(1.5)),
            "09000000000000f83f1a0d627261696e2e4576656e743a32"
        );
        assert_eq!(
            hex(&encode_scalar(2.0, 0, "a", 0.0)),
            "0900000000000000402a0a0a080a01611500000000"
        );
        let mut record = Vec::new();
        write_record(&mut record, &encode_scalar(1.5, 3, "loss", 0.25)).unwrap();
        assert_eq!(
            hex(&record),
            "1a00000000000000129bd82d09000000000000f83f10032a0d0a0b0a046c6f7373150000803ed054b255"
        );
    }

    /// A scratch directory of its own for each test.
    fn scratch_dir(name: &str) -> PathBuf {
        static N: AtomicU64 = AtomicU64::new(0);
        let dir = std::env::temp_dir().join(format!(
            "xpm-torch-{name}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = fs::remove_dir_all(&dir);
        dir
    }

    #[derive(Debug, Clone, Copy)]
    enum Field<'a> {
        Varint(u64),
        Fixed64(u64),
        Bytes(&'a [u8]),
        Fixed32(u32),
    }

    fn read_varint(buf: &[u8], pos: &mut usize) -> u64 {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let b = buf[*pos];
            *pos += 1;
            v |= u64::from(b & 0x7F) << shift;
            if b < 0x80 {
                return v;
            }
        }
        panic!("varint too long");
    }

    /// Every field of one message, in order.
    fn fields(msg: &[u8]) -> Vec<(u32, Field<'_>)> {
        let mut pos = 0;
        let mut out = Vec::new();
        while pos < msg.len() {
            let key = read_varint(msg, &mut pos);
            let (field, wire) = ((key >> 3) as u32, (key & 7) as u8);
            let value = match wire {
                0 => Field::Varint(read_varint(msg, &mut pos)),
                1 => {
                    pos += 8;
                    Field::Fixed64(u64::from_le_bytes(msg[pos - 8..pos].try_into().unwrap()))
                }
                2 => {
                    let len = read_varint(msg, &mut pos) as usize;
                    pos += len;
                    Field::Bytes(&msg[pos - len..pos])
                }
                5 => {
                    pos += 4;
                    Field::Fixed32(u32::from_le_bytes(msg[pos - 4..pos].try_into().unwrap()))
                }
                other => panic!("wire type {other}"),
            };
            out.push((field, value));
        }
        assert_eq!(pos, msg.len(), "message overran its length");
        out
    }

    /// The payloads of a TFRecord file, checking the framing and both CRCs of each record.
    fn records(file: &[u8]) -> Vec<&[u8]> {
        let mut pos = 0;
        let mut out = Vec::new();
        let u32_at = |at: usize| u32::from_le_bytes(file[at..at + 4].try_into().unwrap());
        while pos < file.len() {
            let len_bytes = &file[pos..pos + 8];
            let len = u64::from_le_bytes(len_bytes.try_into().unwrap()) as usize;
            let len_crc = u32_at(pos + 8);
            let payload = &file[pos + 12..pos + 12 + len];
            let payload_crc = u32_at(pos + 12 + len);
            assert_eq!(len_crc, masked_crc32c(len_bytes), "length CRC at {pos}");
            assert_eq!(payload_crc, masked_crc32c(payload), "payload CRC at {pos}");
            assert_ne!(payload_crc, crc32c(payload), "the CRC must be masked");
            out.push(payload);
            pos += 12 + len + 4;
        }
        out
    }

    #[derive(Debug, Default, PartialEq)]
    struct Decoded {
        wall_time: f64,
        step: u64,
        file_version: Option<String>,
        scalars: Vec<(String, f32)>,
    }

    fn decode_event(payload: &[u8]) -> Decoded {
        let mut event = Decoded::default();
        for (field, value) in fields(payload) {
            match (field, value) {
                (1, Field::Fixed64(bits)) => event.wall_time = f64::from_bits(bits),
                (2, Field::Varint(step)) => event.step = step,
                (3, Field::Bytes(s)) => {
                    event.file_version = Some(String::from_utf8(s.to_vec()).unwrap())
                }
                (5, Field::Bytes(summary)) => {
                    for (field, value) in fields(summary) {
                        let (1, Field::Bytes(value)) = (field, value) else {
                            panic!("Summary field {field}: {value:?}");
                        };
                        let (mut tag, mut simple) = (None, None);
                        for (field, v) in fields(value) {
                            match (field, v) {
                                (1, Field::Bytes(t)) => {
                                    tag = Some(String::from_utf8(t.to_vec()).unwrap())
                                }
                                (2, Field::Fixed32(bits)) => simple = Some(f32::from_bits(bits)),
                                other => panic!("Summary.Value field {other:?}"),
                            }
                        }
                        event.scalars.push((tag.unwrap(), simple.unwrap()));
                    }
                }
                other => panic!("Event field {other:?}"),
            }
        }
        event
    }

    /// Writes a run and reads it back by hand. With `XPM_TORCH_TFEVENTS_OUT` set, the run goes to
    /// that directory and stays there, for checks with other readers
    /// (`scripts/check_tfevents.py <dir> train/loss 100`).
    #[test]
    fn round_trip() {
        let keep = std::env::var_os("XPM_TORCH_TFEVENTS_OUT").map(PathBuf::from);
        let dir = keep.clone().unwrap_or_else(|| scratch_dir("tfevents"));
        let before = now();
        let mut writer = EventWriter::create(&dir).unwrap();
        let name = writer
            .path()
            .file_name()
            .unwrap()
            .to_str()
            .unwrap()
            .to_string();
        let parts: Vec<&str> = name.split('.').collect();
        assert_eq!(parts[..3], ["events", "out", "tfevents"], "{name}");
        assert!(parts[3].parse::<u64>().unwrap() + 1 >= before as u64);
        assert_eq!(
            parts[parts.len() - 2],
            std::process::id().to_string(),
            "{name}"
        );
        assert!(parts[parts.len() - 1].parse::<u64>().is_ok(), "{name}");

        let mut expected = Vec::new();
        for step in 0..100u64 {
            let loss = 1.0 / (1.0 + step as f64);
            writer.add_scalar("train/loss", loss, step).unwrap();
            writer
                .add_scalar("train/accuracy", -0.5 + step as f64 / 99.0, step)
                .unwrap();
            expected.push((step, "train/loss", loss as f32));
            expected.push((step, "train/accuracy", (-0.5 + step as f64 / 99.0) as f32));
        }
        let big = (1u64 << 40) + 7;
        writer.add_scalar("test/big_step", 3.0e38, big).unwrap();
        expected.push((big, "test/big_step", 3.0e38));
        writer.flush().unwrap();
        let after = now();

        let bytes = fs::read(writer.path()).unwrap();
        let events: Vec<Decoded> = records(&bytes).into_iter().map(decode_event).collect();
        assert_eq!(events.len(), 1 + expected.len());
        assert_eq!(events[0].file_version.as_deref(), Some("brain.Event:2"));
        assert_eq!((events[0].step, events[0].scalars.len()), (0, 0));
        for (event, (step, tag, value)) in events[1..].iter().zip(&expected) {
            assert!(before <= event.wall_time && event.wall_time <= after);
            assert_eq!(event.file_version, None);
            assert_eq!(event.step, *step);
            assert_eq!(event.scalars, [(tag.to_string(), *value)]);
        }
        if keep.is_none() {
            fs::remove_dir_all(&dir).unwrap();
        }
    }

    #[test]
    fn names_are_unique_within_the_process() {
        let dir = scratch_dir("tfevents-names");
        let a = EventWriter::create(&dir).unwrap();
        let b = EventWriter::create(&dir.join("nested/run")).unwrap();
        let c = EventWriter::create(&dir).unwrap();
        assert_ne!(a.path(), c.path());
        assert!(b.path().starts_with(dir.join("nested/run")));
        assert_eq!(fs::read_dir(&dir).unwrap().count(), 3);
        drop((a, b, c));
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn io_failures_are_errors() {
        let dir = scratch_dir("tfevents-io");
        fs::create_dir_all(&dir).unwrap();
        let file = dir.join("not-a-dir");
        fs::write(&file, b"").unwrap();
        let err = EventWriter::create(&file.join("run")).unwrap_err();
        assert_eq!(err.code(), "ERR_IO");
        assert!(err.to_string().contains("not-a-dir"), "{err}");
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_host_name_is_safe_in_a_file_name() {
        let host = hostname();
        assert!(!host.is_empty());
        assert!(host
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c)));
    }
}
