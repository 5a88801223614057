//! The one error type of a contract call.

use core::fmt;

/// A contract error: a message the caller receives, and the reason the call's writes and
/// events are discarded.
///
/// Build one from a `String` or `&str` (`Err("no such asset".into())`), with
/// [`bail!`](crate::bail) / [`ensure!`](crate::ensure), or let `?` convert a
/// `serde_json` error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    message: String,
}

/// The result type of every contract function.
pub type Result<T> = core::result::Result<T, Error>;

impl Error {
    /// An error with `message`.
    pub fn new(message: impl Into<String>) -> Self {
        Error {
            message: message.into(),
        }
    }

    /// The message the caller receives.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The message, by value.
    pub fn into_message(self) -> String {
        self.message
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}

impl From<String> for Error {
    fn from(message: String) -> Self {
        Error::new(message)
    }
}

impl From<&str> for Error {
    fn from(message: &str) -> Self {
        Error::new(message)
    }
}

impl From<serde_json::Error> for Error {
    fn from(error: serde_json::Error) -> Self {
        Error::new(error.to_string())
    }
}

/// Returns early from a contract function with an [`Error`] built like `format!`.
///
/// ```
/// use runnel_contract::{bail, Result};
///
/// fn check(amount: u64) -> Result<()> {
///     if amount == 0 {
///         bail!("amount must be positive, got {amount}");
///     }
///     Ok(())
/// }
/// assert_eq!(check(0).unwrap_err().message(), "amount must be positive, got 0");
/// ```
#[macro_export]
macro_rules! bail {
    ($($arg:tt)+) => {
        return ::core::result::Result::Err($crate::Error::new(::std::format!($($arg)+)))
    };
}

/// Returns early with an [`Error`] built like `format!` unless a condition holds.
///
/// ```
/// use runnel_contract::{ensure, Result};
///
/// fn check(amount: u64) -> Result<()> {
///     ensure!(amount > 0, "amount must be positive, got {amount}");
///     Ok(())
/// }
/// assert!(check(1).is_ok());
/// assert_eq!(check(0).unwrap_err().message(), "amount must be positive, got 0");
/// ```
#[macro_export]
macro_rules! ensure {
    ($cond:expr, $($arg:tt)+) => {
        if !$cond {
            $crate::bail!($($arg)+);
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conversions_keep_the_message() {
        assert_eq!(Error::from("boom").message(), "boom");
        assert_eq!(Error::from(String::from("boom")).to_string(), "boom");
        let json = serde_json::from_str::<u64>("x").unwrap_err();
        assert_eq!(
            Error::from(json).message(),
            "expected value at line 1 column 1"
        );
        assert_eq!(Error::new("a").into_message(), "a");
    }
}
