//! `leasehold auth enable|disable|status|bootstrap`, `role add|grant|revoke|ls`,
//! `user add|role|quota|ls`, `token create|revoke|ls`: who may do what.
//! Every change needs `admin` on "" while auth is enabled (but `auth
//! bootstrap`, accepted once, from the server's own host, while nobody is
//! admin). A refusal exits 7 with a sentence naming principal, verb and
//! prefix.

use super::Global;
use crate::error::CliError;
use crate::output::{print_json, table};
use leasehold_client::ops::auth::QuotaArgs;
use leasehold_client::wire::CreateTokenResponse;
use serde_json::json;
use std::time::Duration;

/// `leasehold auth ...`
#[derive(clap::Subcommand, Debug)]
pub enum AuthCmd {
    /// Starts refusing calls without the verb they need (refused unless
    /// some principal holds admin on "").
    Enable,
    /// Stops refusing calls.
    Disable,
    /// Shows whether auth is enabled, whether an admin exists, and who the
    /// server takes you for.
    Status,
    /// Once, from the server's own host, while nobody is admin: makes
    /// PRINCIPAL an admin and prints its one-time token.
    Bootstrap {
        /// The admin to make.
        #[arg(default_value = "admin")]
        principal: String,
    },
}

/// `leasehold role ...`
#[derive(clap::Subcommand, Debug)]
pub enum RoleCmd {
    /// Creates an empty role.
    Add { role: String },
    /// Allows (or with --deny, denies) VERB (observe, lock, force, admin)
    /// on names starting with PREFIX ("" for all), creating the role.
    Grant {
        role: String,
        prefix: String,
        verb: String,
        #[arg(long)]
        deny: bool,
    },
    /// Removes VERB from ROLE's rule on PREFIX.
    Revoke {
        role: String,
        prefix: String,
        verb: String,
    },
    /// Lists the roles and their rules.
    Ls {
        #[arg(long)]
        json: bool,
    },
}

/// `leasehold user ...`
#[derive(clap::Subcommand, Debug)]
pub enum UserCmd {
    /// Creates user PRINCIPAL with roles.
    Add {
        principal: String,
        /// A role to give (repeat for several).
        #[arg(long = "role")]
        roles: Vec<String>,
    },
    /// Replaces PRINCIPAL's roles.
    Role {
        principal: String,
        #[arg(long = "role")]
        roles: Vec<String>,
    },
    /// Sets PRINCIPAL's quotas (an omitted one is unbounded, but for the
    /// global limits).
    Quota {
        principal: String,
        /// Live leases.
        #[arg(long)]
        leases: Option<u64>,
        /// Locks held (queued waits count too).
        #[arg(long)]
        held: Option<u64>,
        /// Waits queued.
        #[arg(long)]
        waiters: Option<u64>,
    },
    /// Lists users with roles, quotas and usage.
    Ls {
        #[arg(long)]
        json: bool,
    },
}

/// `leasehold token ...`
#[derive(clap::Subcommand, Debug)]
pub enum TokenCmd {
    /// Makes a token for PRINCIPAL and prints its secret (shown only now).
    Create {
        principal: String,
        /// Refuse the token after this long (30m, 7d, ...); default: never.
        #[arg(long, value_parser = crate::duration::parse, value_name = "DURATION")]
        expires_in: Option<Duration>,
        #[arg(long)]
        json: bool,
    },
    /// Revokes token ID: its next use is refused.
    Revoke { id: String },
    /// Lists tokens (never their secrets).
    Ls {
        #[arg(long)]
        json: bool,
    },
}

/// Runs `auth`.
pub async fn run_auth(cmd: AuthCmd, global: &Global) -> Result<(), CliError> {
    let client = global.client().await?;
    match cmd {
        AuthCmd::Enable => {
            client.auth_enable().await?;
            println!("auth enabled: every call now needs a token (--auth-token) or a certificate");
        }
        AuthCmd::Disable => {
            client.auth_disable().await?;
            println!("auth disabled: every call is allowed");
        }
        AuthCmd::Status => {
            let status = client.auth_status().await?;
            let who = if status.principal.is_empty() {
                "anonymous"
            } else {
                &status.principal
            };
            println!(
                "enabled: {}\nadmin exists: {}\nyou are: {who}",
                status.enabled, status.admin_exists
            );
        }
        AuthCmd::Bootstrap { principal } => {
            let created = client.auth_bootstrap(&principal).await?;
            print_secret(&created, false);
            eprintln!("next: leasehold --auth-token <the token above> auth enable");
        }
    }
    Ok(())
}

/// Runs `role`.
pub async fn run_role(cmd: RoleCmd, global: &Global) -> Result<(), CliError> {
    let client = global.client().await?;
    match cmd {
        RoleCmd::Add { role } => {
            client.role_add(&role).await?;
        }
        RoleCmd::Grant {
            role,
            prefix,
            verb,
            deny,
        } => {
            client.role_grant(&role, &prefix, &verb, deny).await?;
        }
        RoleCmd::Revoke { role, prefix, verb } => {
            client.role_revoke(&role, &prefix, &verb).await?;
        }
        RoleCmd::Ls { json } => {
            let roles = client.roles().await?.roles;
            if json {
                let roles: Vec<_> = roles
                    .iter()
                    .map(|r| {
                        let rules: Vec<_> = r
                            .rules
                            .iter()
                            .map(|x| json!({"prefix": x.prefix, "allow": x.allow, "deny": x.deny}))
                            .collect();
                        json!({"role": r.name, "rules": rules})
                    })
                    .collect();
                print_json(&json!(roles));
            } else {
                let mut rows = vec![vec![
                    "ROLE".into(),
                    "PREFIX".into(),
                    "ALLOW".into(),
                    "DENY".into(),
                ]];
                for role in &roles {
                    for rule in &role.rules {
                        rows.push(vec![
                            role.name.clone(),
                            format!("{:?}", rule.prefix),
                            rule.allow.join(","),
                            rule.deny.join(","),
                        ]);
                    }
                }
                print!("{}", table(&rows));
            }
        }
    }
    Ok(())
}

/// Runs `user`.
pub async fn run_user(cmd: UserCmd, global: &Global) -> Result<(), CliError> {
    let client = global.client().await?;
    match cmd {
        UserCmd::Add { principal, roles } => {
            client.user_add(&principal, &roles).await?;
        }
        UserCmd::Role { principal, roles } => {
            client.user_roles(&principal, &roles).await?;
        }
        UserCmd::Quota {
            principal,
            leases,
            held,
            waiters,
        } => {
            let quota = QuotaArgs {
                leases,
                held,
                waiters,
            };
            {
                client.user_quota(&principal, quota).await?;
            }
        }
        UserCmd::Ls { json } => {
            let users = client.users().await?.users;
            let bound = |q: Option<u64>| q.map_or_else(|| "-".to_owned(), |q| q.to_string());
            if json {
                let users: Vec<_> = users.iter().map(|u| json!({
                    "principal": u.principal, "roles": u.roles,
                    "quota": {"leases": u.quota_leases, "held": u.quota_held, "waiters": u.quota_waiters},
                    "usage": {"leases": u.leases, "held": u.held, "waiters": u.waiters},
                })).collect();
                print_json(&json!(users));
            } else {
                let mut rows = vec![vec![
                    "PRINCIPAL".into(),
                    "ROLES".into(),
                    "LEASES".into(),
                    "HELD".into(),
                    "WAITERS".into(),
                ]];
                for u in &users {
                    rows.push(vec![
                        u.principal.clone(),
                        u.roles.join(","),
                        format!("{}/{}", u.leases, bound(u.quota_leases)),
                        format!("{}/{}", u.held, bound(u.quota_held)),
                        format!("{}/{}", u.waiters, bound(u.quota_waiters)),
                    ]);
                }
                print!("{}", table(&rows));
            }
        }
    }
    Ok(())
}

/// Runs `token`.
pub async fn run_token(cmd: TokenCmd, global: &Global) -> Result<(), CliError> {
    let client = global.client().await?;
    match cmd {
        TokenCmd::Create {
            principal,
            expires_in,
            json,
        } => {
            print_secret(&client.token_create(&principal, expires_in).await?, json);
        }
        TokenCmd::Revoke { id } => {
            client.token_revoke(&id).await?;
        }
        TokenCmd::Ls { json } => {
            let tokens = client.tokens().await?.tokens;
            if json {
                let tokens: Vec<_> = tokens.iter().map(|t| json!({
                    "id": t.id, "principal": t.principal,
                    "created_unix_ms": t.created_unix_ms, "expires_unix_ms": t.expires_unix_ms,
                })).collect();
                print_json(&json!(tokens));
            } else {
                let mut rows = vec![vec![
                    "ID".into(),
                    "PRINCIPAL".into(),
                    "EXPIRES_UNIX_MS".into(),
                ]];
                for t in &tokens {
                    let expires = if t.expires_unix_ms == 0 {
                        "never".into()
                    } else {
                        t.expires_unix_ms.to_string()
                    };
                    rows.push(vec![t.id.clone(), t.principal.clone(), expires]);
                }
                print!("{}", table(&rows));
            }
        }
    }
    Ok(())
}

/// Prints a new token: its secret alone on stdout (for `$(...)`), or JSON.
fn print_secret(created: &CreateTokenResponse, json: bool) {
    if json {
        print_json(&json!({
            "id": created.id, "principal": created.principal,
            "secret": created.secret, "expires_unix_ms": created.expires_unix_ms,
        }));
    } else {
        println!("{}", created.secret);
        eprintln!(
            "token {} for {}: shown once; pass it as --auth-token or LEASEHOLD_AUTH_TOKEN",
            created.id, created.principal
        );
    }
}
