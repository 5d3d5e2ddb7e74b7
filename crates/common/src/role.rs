//! Roles of users and service accounts, as the catalog stores them.

/// Roles of users and service accounts. Catalog changes need `Admin` or `Maintainer`;
/// reading and querying need none.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Role {
    Admin,
    Maintainer,
    Observer,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Admin => "admin",
            Role::Maintainer => "maintainer",
            Role::Observer => "observer",
        }
    }

    pub fn parse(text: &str) -> Option<Role> {
        match text {
            "admin" => Some(Role::Admin),
            "maintainer" => Some(Role::Maintainer),
            "observer" => Some(Role::Observer),
            _ => None,
        }
    }

    /// Whether the role may create, change, delete or restore catalog objects.
    pub fn may_change_catalog(self) -> bool {
        matches!(self, Role::Admin | Role::Maintainer)
    }
}
