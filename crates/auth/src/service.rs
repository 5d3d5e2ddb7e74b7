//! Services authenticate each other with a token derived from the master key
//! (`BZRK_MASTER_KEY`): HMAC-SHA256 of a fixed label, sent as `x-trawl-service-token`.
//! During a rotation the `secondary_master_key` is accepted too.

use hmac::{Hmac, Mac};
use sha2::Sha256;
use subtle::ConstantTimeEq;

/// Header of the service token.
pub const SERVICE_TOKEN_HEADER: &str = "x-trawl-service-token";

/// Shortest master key accepted.
pub const MIN_MASTER_KEY_LEN: usize = 32;

const LABEL: &[u8] = b"trawl-service-token-v1";

/// The master keys a service knows.
#[derive(Clone)]
pub struct MasterKeys {
    primary: String,
    secondary: Option<String>,
}

impl std::fmt::Debug for MasterKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("MasterKeys { .. }")
    }
}

/// Why a master key was refused.
#[derive(Debug, thiserror::Error)]
#[error("the master key must be at least {MIN_MASTER_KEY_LEN} characters")]
pub struct WeakMasterKey;

fn derive(key: &str) -> String {
    hex::encode(derive_bytes(key, LABEL))
}

/// HMAC-SHA256 of `label` under `key`.
fn derive_bytes(key: &str, label: &[u8]) -> [u8; 32] {
    match Hmac::<Sha256>::new_from_slice(key.as_bytes()) {
        Ok(mut mac) => {
            mac.update(label);
            mac.finalize().into_bytes().into()
        }
        // HMAC takes keys of any length; this cannot happen.
        Err(_) => [0; 32],
    }
}

impl MasterKeys {
    pub fn new(primary: &str, secondary: Option<&str>) -> Result<MasterKeys, WeakMasterKey> {
        let strong = |key: &str| key.len() >= MIN_MASTER_KEY_LEN;
        if !strong(primary) || secondary.is_some_and(|key| !strong(key)) {
            return Err(WeakMasterKey);
        }
        Ok(MasterKeys {
            primary: primary.to_string(),
            secondary: secondary.map(str::to_string),
        })
    }

    /// The token this service sends.
    pub fn token(&self) -> String {
        derive(&self.primary)
    }

    /// A secret for `purpose` derived from the primary key, the same on every service of the
    /// cluster (such as the key gateways encrypt browser sessions with).
    pub fn secret_for(&self, purpose: &[u8]) -> [u8; 32] {
        derive_bytes(&self.primary, purpose)
    }

    /// Whether a presented token comes from the primary or the secondary key (constant time).
    pub fn accepts(&self, presented: &str) -> bool {
        let matches = |key: &str| bool::from(derive(key).as_bytes().ct_eq(presented.as_bytes()));
        matches(&self.primary) | self.secondary.as_deref().is_some_and(matches)
    }
}

/// A key a service without the master key (ingest) makes for itself: 32 random bytes as 64
/// hex characters. Meta records its digest at the first registration and asks for the same
/// key afterwards.
pub fn make_self_key() -> Result<String, getrandom::Error> {
    crate::random_bytes::<32>().map(hex::encode)
}

/// The digest meta keeps of a self-made key.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct KeyDigest([u8; 32]);

impl std::fmt::Debug for KeyDigest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("KeyDigest { .. }")
    }
}

impl KeyDigest {
    pub fn of(key: &str) -> KeyDigest {
        use sha2::Digest;
        KeyDigest(Sha256::digest(key.as_bytes()).into())
    }

    /// Whether `other` is the same key's digest (constant time).
    pub fn matches(&self, other: &KeyDigest) -> bool {
        bool::from(self.0.ct_eq(&other.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_come_from_the_keys() -> Result<(), WeakMasterKey> {
        let old = "o".repeat(32);
        let new = "n".repeat(32);
        let rotating = MasterKeys::new(&new, Some(&old))?;
        assert!(rotating.accepts(&MasterKeys::new(&old, None)?.token()));
        assert!(rotating.accepts(&rotating.token()));
        let wrong = MasterKeys::new(&"w".repeat(32), None)?;
        assert!(!rotating.accepts(&wrong.token()));
        assert!(!rotating.accepts(""));
        assert!(MasterKeys::new("short", None).is_err());
        assert!(!format!("{rotating:?}").contains(&new));
        Ok(())
    }

    #[test]
    fn self_made_keys_are_random_and_checked_by_digest() -> Result<(), getrandom::Error> {
        let (one, two) = (make_self_key()?, make_self_key()?);
        assert_eq!(one.len(), 64);
        assert_ne!(one, two);
        assert!(KeyDigest::of(&one).matches(&KeyDigest::of(&one)));
        assert!(!KeyDigest::of(&one).matches(&KeyDigest::of(&two)));
        Ok(())
    }
}
