//! An input file opened exactly once.
//!
//! A regular file is read in place; anything else (a pipe, a FIFO,
//! `/dev/stdin`, `-` for standard input) is copied once into an unnamed
//! temporary file, because Parquet's footer sits at the end and a streamed
//! fit reads its file several times. Every later read starts from the first
//! byte of that one open file, so a FIFO is never opened twice.

use std::fs::File;
use std::io::{BufReader, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::{Error, Result};

/// Read buffer: large sequential reads for files of gigabytes.
const BUFFER_BYTES: usize = 1 << 20;

/// How a data file stores its rows, recognised by content, not by name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum InputFormat {
    /// Comma-separated text with a header row.
    Csv,
    /// Apache Parquet: starts with the bytes `PAR1`.
    Parquet,
}

/// Which file an open file is (device and inode on Unix): the same for a
/// path, `./path`, a symbolic link to it and a hard link to it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileId {
    device: u64,
    inode: u64,
}

impl FileId {
    /// The identity of the file `meta` describes, where the platform has one.
    pub fn of(meta: &std::fs::Metadata) -> Option<FileId> {
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
            Some(FileId {
                device: meta.dev(),
                inode: meta.ino(),
            })
        }
        #[cfg(not(unix))]
        {
            let _ = meta;
            None
        }
    }
}

/// An input opened once (module documentation).
///
/// ```
/// use std::io::Read;
/// use sgp_trainer::files::Input;
///
/// let input = Input::from_bytes(b"x,y\n1,2\n", "inline.csv").unwrap();
/// let mut text = String::new();
/// input.reader().unwrap().read_to_string(&mut text).unwrap();
/// assert_eq!(text, "x,y\n1,2\n");
/// ```
#[derive(Clone, Debug)]
pub struct Input {
    file: Arc<File>,
    name: String,
    canonical: Option<PathBuf>,
    id: Option<FileId>,
    bytes: u64,
    spooled: bool,
}

impl Input {
    /// Opens `path` (`-`: standard input) once; a pipe or device is copied
    /// to an unnamed temporary file as it is read.
    ///
    /// # Errors
    /// [`Error::Unreadable`] if it cannot be opened or read;
    /// [`Error::BadInput`] for a directory, or standard input that is a
    /// terminal (nothing was piped in).
    pub fn open(path: impl AsRef<Path>) -> Result<Input> {
        let path = path.as_ref();
        if path == Path::new("-") {
            return Self::stdin();
        }
        let unreadable = |source| Error::Unreadable {
            path: path.to_path_buf(),
            source,
        };
        let file = File::open(path).map_err(unreadable)?;
        let meta = file.metadata().map_err(unreadable)?;
        if meta.is_dir() {
            return Err(Error::BadInput(format!(
                "{}: is a directory, not a file",
                path.display()
            )));
        }
        if is_device(&meta) {
            // /dev/zero or /dev/urandom would be copied without end.
            return Err(Error::BadInput(format!(
                "{}: is a device, not a data file (pipe its output into '-' instead)",
                path.display()
            )));
        }
        let canonical = std::fs::canonicalize(path).ok();
        Self::from_file(file, &meta, path.display().to_string(), canonical)
    }

    /// An input holding `bytes` (tests, data made in memory); `name` names
    /// it in messages.
    ///
    /// # Errors
    /// [`Error::Io`] if the temporary file cannot be written.
    pub fn from_bytes(bytes: &[u8], name: &str) -> Result<Input> {
        let (file, len) = spool(bytes, name)?;
        Ok(Input {
            file: Arc::new(file),
            name: name.to_owned(),
            canonical: None,
            id: None,
            bytes: len,
            spooled: true,
        })
    }

    fn stdin() -> Result<Input> {
        use std::io::IsTerminal;
        let name = "standard input".to_owned();
        let stdin = std::io::stdin();
        if stdin.is_terminal() {
            return Err(Error::BadInput(
                "'-' reads standard input, which is a terminal here: pipe or redirect the data \
                 in (... --data - < data.csv)"
                    .into(),
            ));
        }
        #[cfg(unix)]
        {
            use std::os::fd::AsFd;
            let unreadable = |source| Error::Unreadable {
                path: PathBuf::from("-"),
                source,
            };
            let file = File::from(stdin.as_fd().try_clone_to_owned().map_err(unreadable)?);
            let meta = file.metadata().map_err(unreadable)?;
            Self::from_file(file, &meta, name, None)
        }
        #[cfg(not(unix))]
        {
            let (file, bytes) = spool(stdin.lock(), &name)?;
            Ok(Input {
                file: Arc::new(file),
                name,
                canonical: None,
                id: None,
                bytes,
                spooled: true,
            })
        }
    }

    fn from_file(
        mut file: File,
        meta: &std::fs::Metadata,
        name: String,
        canonical: Option<PathBuf>,
    ) -> Result<Input> {
        let id = FileId::of(meta);
        // A regular file read from its start (standard input redirected
        // from a file may have been read from already: then copy the rest).
        let at_start = meta.is_file() && file.stream_position().is_ok_and(|p| p == 0);
        if at_start {
            return Ok(Input {
                file: Arc::new(file),
                name,
                canonical,
                id,
                bytes: meta.len(),
                spooled: false,
            });
        }
        let (spooled, bytes) = spool(&mut file, &name)?;
        Ok(Input {
            file: Arc::new(spooled),
            name,
            canonical,
            id,
            bytes,
            spooled: true,
        })
    }

    /// How the input names itself in messages: the path as given, or
    /// `standard input`.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Which file was opened (for refusing an output that is this input).
    pub fn id(&self) -> Option<FileId> {
        self.id
    }

    /// The canonical path of the file opened, if it has one.
    pub(crate) fn canonical_path(&self) -> Option<&Path> {
        self.canonical.as_deref()
    }

    /// Size in bytes.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// The size now (a file being written grows after it was opened).
    ///
    /// # Errors
    /// [`Error::Unreadable`] if it cannot be asked.
    pub(crate) fn current_bytes(&self) -> Result<u64> {
        if self.spooled {
            return Ok(self.bytes);
        }
        self.file
            .metadata()
            .map(|m| m.len())
            .map_err(|e| self.unreadable(e))
    }

    /// A buffered reader from the first byte (each call starts over; one
    /// reader at a time).
    ///
    /// # Errors
    /// [`Error::Unreadable`] if the file cannot be rewound.
    pub fn reader(&self) -> Result<BufReader<&File>> {
        let mut file: &File = &self.file;
        file.seek(SeekFrom::Start(0))
            .map_err(|e| self.unreadable(e))?;
        Ok(BufReader::with_capacity(BUFFER_BYTES, file))
    }

    /// CSV or Parquet, from the first four bytes.
    ///
    /// # Errors
    /// [`Error::Unreadable`] if they cannot be read.
    pub(crate) fn format(&self) -> Result<InputFormat> {
        let mut magic = [0u8; 4];
        let mut read = 0;
        let mut reader = self.reader()?;
        while read < magic.len() {
            match reader.read(&mut magic[read..]) {
                Ok(0) => break,
                Ok(n) => read += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(self.unreadable(e)),
            }
        }
        if read == 4 && &magic == b"PAR1" {
            return Ok(InputFormat::Parquet);
        }
        if let Some(what) = binary_kind(&magic[..read]) {
            return Err(Error::BadInput(format!(
                "{}: {what}; sgp reads data as CSV (UTF-8 text) or Parquet",
                self.name
            )));
        }
        Ok(InputFormat::Csv)
    }

    /// Every byte, refusing an input larger than `limit` bytes without
    /// reading it (a model blob is kilobytes; a wrong file may be huge).
    ///
    /// # Errors
    /// [`Error::BadInput`] beyond `limit`; [`Error::Unreadable`].
    pub fn read_all(&self, limit: u64) -> Result<Vec<u8>> {
        if self.bytes > limit {
            return Err(Error::BadInput(format!(
                "{}: {} bytes, more than the {limit} bytes expected of it",
                self.name, self.bytes
            )));
        }
        let mut out = Vec::with_capacity(usize::try_from(self.bytes).unwrap_or(0));
        self.reader()?
            .read_to_end(&mut out)
            .map_err(|e| self.unreadable(e))?;
        Ok(out)
    }

    /// A second handle on the same open file (not a second open), for
    /// readers that seek on their own (Parquet).
    ///
    /// # Errors
    /// [`Error::Unreadable`] if the handle cannot be duplicated.
    pub(crate) fn handle(&self) -> Result<File> {
        self.file.try_clone().map_err(|e| self.unreadable(e))
    }

    fn unreadable(&self, source: std::io::Error) -> Error {
        Error::Unreadable {
            path: PathBuf::from(&self.name),
            source,
        }
    }
}

/// Whether `meta` is a character or block device.
fn is_device(meta: &std::fs::Metadata) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        let kind = meta.file_type();
        kind.is_char_device() || kind.is_block_device()
    }
    #[cfg(not(unix))]
    {
        let _ = meta;
        false
    }
}

/// What a file that is neither CSV nor Parquet is, from its first bytes,
/// for the kinds a user most often hands over by mistake.
fn binary_kind(start: &[u8]) -> Option<&'static str> {
    match start {
        [0x1f, 0x8b, ..] => Some("a gzip-compressed file (decompress it first)"),
        [b'P', b'K', 3, 4] => Some("a zip archive (an Excel workbook? save the sheet as CSV)"),
        [0xff, 0xfe, ..] | [0xfe, 0xff, ..] => Some("UTF-16 text (save it as UTF-8)"),
        [b'S', b'G', b'P', b'M'] => Some("an sgp model blob, not data"),
        _ => None,
    }
}

/// Copies `reader` to an unnamed temporary file, rewound.
fn spool(mut reader: impl Read, name: &str) -> Result<(File, u64)> {
    let temp_dir = || std::env::temp_dir();
    let mut spool = tempfile::tempfile().map_err(|source| Error::Io {
        path: temp_dir(),
        source,
    })?;
    let mut buffer = vec![0u8; 1 << 16];
    let mut bytes = 0u64;
    loop {
        let n = match reader.read(&mut buffer) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(source) => {
                return Err(Error::Unreadable {
                    path: PathBuf::from(name),
                    source,
                })
            }
        };
        spool.write_all(&buffer[..n]).map_err(|source| Error::Io {
            path: temp_dir(),
            source,
        })?;
        bytes += n as u64;
    }
    spool.seek(SeekFrom::Start(0)).map_err(|source| Error::Io {
        path: temp_dir(),
        source,
    })?;
    Ok((spool, bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_is_read_from_the_start_every_time_and_its_format_seen() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("d.csv");
        std::fs::write(&path, "a,y\n1,2\n").unwrap();
        let input = Input::open(&path).unwrap();
        assert!(!input.spooled);
        assert_eq!(input.format().unwrap(), InputFormat::Csv);
        for _ in 0..2 {
            let mut text = String::new();
            input.reader().unwrap().read_to_string(&mut text).unwrap();
            assert_eq!(text, "a,y\n1,2\n");
        }
        let parquet = Input::from_bytes(b"PAR1rest", "p").unwrap();
        assert_eq!(parquet.format().unwrap(), InputFormat::Parquet);
        assert_eq!(
            Input::from_bytes(b"PA", "p").unwrap().format().unwrap(),
            InputFormat::Csv
        );
    }

    #[test]
    fn missing_files_and_directories_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let err = Input::open(dir.path().join("nope.csv")).unwrap_err();
        assert!(matches!(err, Error::Unreadable { .. }), "{err}");
        assert_eq!(err.exit_code(), 2);
        let err = Input::open(dir.path()).unwrap_err().to_string();
        assert!(err.contains("is a directory"), "{err}");
        #[cfg(unix)]
        {
            let err = Input::open("/dev/zero").unwrap_err().to_string();
            assert!(err.contains("is a device"), "{err}");
        }
        let big = Input::from_bytes(&[0; 100], "b").unwrap();
        assert!(big.read_all(99).is_err());
        assert_eq!(big.read_all(100).unwrap().len(), 100);
    }

    #[cfg(unix)]
    #[test]
    fn a_fifo_is_opened_once_and_copied() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("f.csv");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        if !made.is_ok_and(|s| s.success()) {
            return; // no mkfifo here: nothing to test
        }
        let writer = {
            let fifo = fifo.clone();
            std::thread::spawn(move || std::fs::write(fifo, "a,y\n1,2\n3,4\n").unwrap())
        };
        let input = Input::open(&fifo).unwrap();
        writer.join().unwrap();
        assert!(input.spooled);
        assert_eq!(input.bytes(), 12);
        for _ in 0..2 {
            let mut text = String::new();
            input.reader().unwrap().read_to_string(&mut text).unwrap();
            assert_eq!(text, "a,y\n1,2\n3,4\n");
        }
    }
}
