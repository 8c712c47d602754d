//! The field rules of the customer vocabulary, each written once: customer (ClusterTenant) names,
//! silo user and object names (DNS labels), domain names, Kubernetes quantities, label values,
//! versions and display text. Pure functions, compiled into the server, the provisioner and the
//! wasm bundle, so the island, the API and provisioning give the same verdict. Each returns the
//! sentence shown under the field.

/// Longest ClusterTenant name: `opencrane-` (10) + 53 = 63, the namespace limit.
pub const CLUSTER_TENANT_NAME_MAX: usize = 53;

/// Longest display name of a customer.
pub const DISPLAY_NAME_MAX: usize = 128;

/// Names that would collide with the platform's own objects.
pub const RESERVED_NAMES: &[(&str, &str)] = &[
    ("system", "opencrane-system is the fleet's own namespace"),
    ("platform", "platform.<base domain> is the fleet console's host"),
    ("fleet", "it is reserved for the fleet"),
    ("www", "it is reserved for the platform's web site"),
    ("api", "it is reserved for the platform's API host"),
];

fn is_lower_alnum(c: char) -> bool {
    c.is_ascii_lowercase() || c.is_ascii_digit()
}

/// A ClusterTenant name: a DNS-1123 label that also starts with a letter (so every name derived
/// from it — Service, database cluster, Helm release — is valid too), short enough that
/// `opencrane-<name>` fits in 63 characters, and not reserved.
pub fn cluster_tenant_name(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("Name is required.".into());
    }
    let len = name.chars().count();
    if len > CLUSTER_TENANT_NAME_MAX {
        return Err(format!(
            "Name is {len} characters long; the maximum is {CLUSTER_TENANT_NAME_MAX}, so that the namespace opencrane-<name> fits in 63."
        ));
    }
    if let Some(bad) = name.chars().find(|c| !is_lower_alnum(*c) && *c != '-') {
        let hint = if bad.is_ascii_uppercase() { " (use lowercase)" } else { "" };
        return Err(format!(
            "Name may only contain lowercase letters, digits and hyphens; “{bad}” is not allowed{hint}."
        ));
    }
    if !name.starts_with(|c: char| c.is_ascii_lowercase()) {
        return Err("Name must start with a lowercase letter.".into());
    }
    if name.ends_with('-') {
        return Err("Name must end with a letter or digit.".into());
    }
    if let Some((_, why)) = RESERVED_NAMES.iter().find(|(reserved, _)| *reserved == name) {
        return Err(format!("“{name}” is reserved: {why}."));
    }
    Ok(())
}

/// A fully qualified host name as the reference's vanity-domain rule has it: lowercase labels of
/// 1–63 letters, digits and inner hyphens, at least two labels, a top-level domain of two or more
/// letters, 253 characters at most.
pub fn domain_name(domain: &str) -> Result<(), String> {
    if domain.len() > 253 {
        return Err(format!("Domain is {} characters long; the maximum is 253.", domain.len()));
    }
    if domain.ends_with('.') {
        return Err("Leave out the trailing dot.".into());
    }
    if domain.contains("://") || domain.contains('/') {
        return Err("Enter a host name only, without a scheme or path (e.g. acme.example.com).".into());
    }
    let labels: Vec<&str> = domain.split('.').collect();
    if labels.len() < 2 {
        return Err("Enter a fully qualified domain name, e.g. acme.example.com.".into());
    }
    for label in &labels {
        if label.is_empty() {
            return Err("Domain has an empty label (two dots in a row?).".into());
        }
        if label.len() > 63 {
            return Err(format!("The label “{label}” is longer than 63 characters."));
        }
        if let Some(bad) = label.chars().find(|c| !is_lower_alnum(*c) && *c != '-') {
            return Err(format!(
                "Domain may only contain lowercase letters, digits, hyphens and dots; “{bad}” is not allowed."
            ));
        }
        if label.starts_with('-') || label.ends_with('-') {
            return Err(format!("The label “{label}” must start and end with a letter or digit."));
        }
    }
    let tld = labels[labels.len() - 1];
    if tld.len() < 2 || !tld.chars().all(|c| c.is_ascii_lowercase()) {
        return Err("The top-level domain must be two or more letters.".into());
    }
    Ok(())
}

/// The binary and decimal SI suffixes of a Kubernetes quantity. The grammar in apimachinery's
/// `quantity.go` lists `m "" k M G T P E` as decimal suffixes; its parser's suffix table also
/// has `n` and `u`, and the API server accepts them, so they are accepted here too.
const QUANTITY_SUFFIXES: &[&str] =
    &["Ki", "Mi", "Gi", "Ti", "Pi", "Ei", "n", "u", "m", "", "k", "M", "G", "T", "P", "E"];

/// A quantity as the grammar reads it: its sign and whether its number is zero.
struct ParsedQuantity {
    negative: bool,
    zero: bool,
}

/// Splits `s` after its leading ASCII digits.
fn split_digits(s: &str) -> (&str, &str) {
    s.split_at(s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len()))
}

/// The Kubernetes quantity grammar, exactly (apimachinery `resource.ParseQuantity`):
///
/// ```text
/// <quantity>        ::= <signedNumber><suffix>
/// <signedNumber>    ::= <number> | <sign><number>
/// <sign>            ::= "+" | "-"
/// <number>          ::= <digits> | <digits>.<digits> | <digits>. | .<digits>
/// <suffix>          ::= <binarySI> | <decimalExponent> | <decimalSI>
/// <binarySI>        ::= Ki | Mi | Gi | Ti | Pi | Ei
/// <decimalSI>       ::= n | u | m | "" | k | M | G | T | P | E
/// <decimalExponent> ::= "e" <signedInteger> | "E" <signedInteger>
/// ```
///
/// The exponent is an integer (the parser reads it with `strconv.ParseInt`, 64 bits).
fn parse_quantity(value: &str) -> Option<ParsedQuantity> {
    let (negative, unsigned) = match value.as_bytes().first() {
        Some(b'-') => (true, &value[1..]),
        Some(b'+') => (false, &value[1..]),
        _ => (false, value),
    };
    let (whole, rest) = split_digits(unsigned);
    let (fraction, suffix) = match rest.strip_prefix('.') {
        Some(after_dot) => split_digits(after_dot),
        None => ("", rest),
    };
    if whole.is_empty() && fraction.is_empty() {
        return None;
    }
    let suffix_ok = QUANTITY_SUFFIXES.contains(&suffix)
        || suffix.strip_prefix(['e', 'E']).is_some_and(|exponent| {
            let digits = exponent.strip_prefix(['+', '-']).unwrap_or(exponent);
            !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) && exponent.parse::<i64>().is_ok()
        });
    let zero = whole.bytes().chain(fraction.bytes()).all(|b| b == b'0');
    suffix_ok.then_some(ParsedQuantity { negative, zero })
}

/// A Kubernetes resource quantity that a ResourceQuota or a container's resources accept: the
/// grammar of [`parse_quantity`] (`500m`, `2`, `+4`, `32Gi`, `1.5`, `1e3`, `100n`), not negative.
pub fn quantity(value: &str) -> Result<(), String> {
    match parse_quantity(value) {
        Some(parsed) if parsed.negative && !parsed.zero => Err("Must not be negative.".into()),
        Some(_) => Ok(()),
        None => Err("Use a Kubernetes quantity such as 500m, 2, 8Gi or 100G.".into()),
    }
}

/// A Kubernetes label value (used as the node-pool selector): 63 characters at most, letters,
/// digits, `-`, `_` and `.`, starting and ending with a letter or digit.
pub fn label_value(value: &str) -> Result<(), String> {
    if value.len() > 63 {
        return Err(format!("Is {} characters long; the maximum is 63.", value.len()));
    }
    if let Some(bad) = value.chars().find(|c| !c.is_ascii_alphanumeric() && !matches!(c, '-' | '_' | '.')) {
        return Err(format!("May only contain letters, digits, “-”, “_” and “.”; “{bad}” is not allowed."));
    }
    let alnum_edge = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric());
    if !alnum_edge(value.chars().next()) || !alnum_edge(value.chars().last()) {
        return Err("Must start and end with a letter or digit.".into());
    }
    Ok(())
}

/// A silo version pin (a chart/application version such as `0.3.1` or `0.4.0-rc.1`): 64
/// characters at most, letters, digits, `.`, `+`, `_` and `-`, starting with a letter or digit
/// (the fleet database's CHECK constraint says the same).
pub fn version(value: &str) -> Result<(), String> {
    if value.len() > 64 {
        return Err(format!("Is {} characters long; the maximum is 64.", value.len()));
    }
    if let Some(bad) = value.chars().find(|c| !c.is_ascii_alphanumeric() && !matches!(c, '.' | '+' | '_' | '-')) {
        return Err(format!("May only contain letters, digits, “.”, “+”, “_” and “-”; “{bad}” is not allowed."));
    }
    if !value.starts_with(|c: char| c.is_ascii_alphanumeric()) {
        return Err("Must start with a letter or digit, e.g. 0.3.1.".into());
    }
    Ok(())
}

/// Free text shown to people: not blank, no control characters, at most `max` characters.
pub fn display_text(label: &str, value: &str, max: usize) -> Result<(), String> {
    if value.is_empty() {
        return Err(format!("{label} is required."));
    }
    let len = value.chars().count();
    if len > max {
        return Err(format!("{label} is {len} characters long; the maximum is {max}."));
    }
    if value.chars().any(char::is_control) {
        return Err(format!("{label} must not contain control characters such as line breaks."));
    }
    Ok(())
}

/// An e-mail address as people type it (`ana@example.com`): required, a local part, a dotted
/// domain, no spaces, at most 254 characters. Deliverability is the identity provider's to check.
pub fn email_address(value: &str) -> Result<(), String> {
    if value.is_empty() {
        return Err("E-mail is required.".into());
    }
    match value.split_once('@') {
        Some((local, domain))
            if !local.is_empty()
                && domain.contains('.')
                && !domain.contains('@')
                && !value.contains(char::is_whitespace)
                && !value.chars().any(char::is_control)
                && value.len() <= 254 =>
        {
            Ok(())
        }
        _ => Err("Enter an e-mail address like ana@example.com.".into()),
    }
}

/// A DNS-1123 label (names of users, policies, credentials, teams).
pub fn dns_label(label: &str, value: &str) -> Result<(), String> {
    if value.is_empty() {
        return Err(format!("{label} is required."));
    }
    if value.len() > 63 {
        return Err(format!("{label} is {} characters long; the maximum is 63.", value.len()));
    }
    if let Some(bad) = value.chars().find(|c| !(c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '-')) {
        let hint = if bad.is_ascii_uppercase() { " (use lowercase)" } else { "" };
        return Err(format!(
            "{label} may only contain lowercase letters, digits and hyphens; “{bad}” is not allowed{hint}."
        ));
    }
    if value.starts_with('-') || value.ends_with('-') {
        return Err(format!("{label} must start and end with a letter or digit."));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn email_addresses() {
        assert_eq!(email_address("ana@example.com"), Ok(()));
        assert_eq!(email_address(""), Err("E-mail is required.".into()));
        for bad in
            ["ana", "@example.com", "ana@localhost", "a na@example.com", "ana@x@example.com", "ana@exa\nmple.com"]
        {
            assert!(email_address(bad).is_err(), "{bad:?}");
        }
    }

    /// The apimachinery DNS-1123 label check (`[a-z0-9]([-a-z0-9]*[a-z0-9])?`, ≤ 63), written
    /// independently of `cluster_tenant_name` so the two can be compared.
    fn is_dns1123_label(s: &str) -> bool {
        let b = s.as_bytes();
        !b.is_empty()
            && b.len() <= 63
            && b.iter().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
            && b[0] != b'-'
            && b[b.len() - 1] != b'-'
    }

    #[test]
    fn accepted_names_always_make_valid_namespaces() {
        // Every name up to length 4 over a small alphabet, plus long ones.
        let alphabet = ['a', 'z', '0', '9', '-', 'A', '_', '.'];
        let mut names = vec![String::new()];
        for _ in 0..4 {
            let longer: Vec<String> =
                names.iter().flat_map(|n| alphabet.iter().map(move |c| format!("{n}{c}"))).collect();
            names.extend(longer);
        }
        names.push("a".repeat(53));
        names.push("a".repeat(54));
        names.push(format!("a{}z", "-".repeat(51)));
        let mut accepted = 0;
        for name in &names {
            if cluster_tenant_name(name).is_ok() {
                accepted += 1;
                let namespace = format!("opencrane-{name}");
                assert!(is_dns1123_label(&namespace), "{namespace} is not a valid namespace");
                assert!(is_dns1123_label(name));
                assert!(name.starts_with(|c: char| c.is_ascii_lowercase()));
            }
        }
        assert!(accepted > 100, "the generator must exercise accepted names too");
    }

    #[test]
    fn name_messages_say_what_is_wrong() {
        assert_eq!(cluster_tenant_name("").unwrap_err(), "Name is required.");
        assert!(cluster_tenant_name("Acme").unwrap_err().contains("use lowercase"));
        assert!(cluster_tenant_name("1acme").unwrap_err().contains("start with a lowercase letter"));
        assert!(cluster_tenant_name("acme-").unwrap_err().contains("end with a letter or digit"));
        assert!(cluster_tenant_name("ac_me").unwrap_err().contains("“_”"));
        assert!(cluster_tenant_name(&"a".repeat(54)).unwrap_err().contains("maximum is 53"));
        assert!(cluster_tenant_name("system").unwrap_err().contains("reserved"));
        assert!(cluster_tenant_name("acme-corp-2").is_ok());
    }

    #[test]
    fn domains_follow_the_reference_rule() {
        for ok in ["acme.example.com", "a.io", "x-1.y-2.example.co", "123.example.org"] {
            assert!(domain_name(ok).is_ok(), "{ok}");
        }
        for bad in [
            "example",
            "Acme.example.com",
            "acme..example.com",
            "-acme.example.com",
            "acme-.example.com",
            "acme.example.c",
            "acme.example.c0m",
            "acme.example.com.",
            "https://acme.example.com",
            "acme_1.example.com",
        ] {
            assert!(domain_name(bad).is_err(), "{bad}");
        }
        assert!(domain_name(&format!("{}.com", "a".repeat(64))).is_err());
        let long = format!("{}.com", vec!["a".repeat(60); 5].join("."));
        assert!(long.len() > 253);
        assert!(domain_name(&long).unwrap_err().contains("253"));
    }

    #[test]
    fn quantities() {
        for ok in [
            "1", "500m", "32Gi", "1.5", "0.25", "100G", "1e3", "1E-2", "+4", ".5", "5.", "100n", "3u", "1E", "2.G",
            "-0", "0.0e+7", "007",
        ] {
            assert!(quantity(ok).is_ok(), "{ok}");
        }
        for bad in [
            "",
            "abc",
            "4 Gi",
            "4gb",
            "1.2.3",
            "Gi",
            ".",
            "1e",
            "1ee3",
            "12Mii",
            "+",
            "-",
            "1K",
            "1ki",
            "1e1.5",
            "++1",
            " 1",
            "1 ",
            "1e+",
            "1e99999999999999999999",
            "1Ki2",
        ] {
            assert!(quantity(bad).is_err(), "{bad}");
        }
        assert_eq!(quantity("-1").unwrap_err(), "Must not be negative.");
        assert_eq!(quantity("-0.5Gi").unwrap_err(), "Must not be negative.");
    }

    #[test]
    fn label_values() {
        for ok in ["pool-a", "gpu_1", "a", "A.b-C_d9"] {
            assert!(label_value(ok).is_ok(), "{ok}");
        }
        for bad in ["-a", "a-", "a b", "ä", &"a".repeat(64)] {
            assert!(label_value(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn display_text_rules() {
        assert!(display_text("Display name", "Acme Corp", 128).is_ok());
        assert_eq!(display_text("Display name", "", 128).unwrap_err(), "Display name is required.");
        assert!(display_text("Display name", "a\nb", 128).is_err());
        assert!(display_text("Display name", &"é".repeat(129), 128).unwrap_err().contains("129"));
    }

    proptest::proptest! {
        /// Every string the grammar generates is a quantity (or, when negative and not zero, is
        /// refused for its sign and nothing else).
        #[test]
        fn generated_quantities_are_accepted(
            sign in proptest::sample::select(vec!["", "+", "-"]),
            whole in "[0-9]{0,6}",
            dot in proptest::bool::ANY,
            fraction in "[0-9]{0,4}",
            suffix in proptest::sample::select(QUANTITY_SUFFIXES.to_vec()),
            exponent in proptest::option::of((proptest::sample::select(vec!["e", "E"]), proptest::sample::select(vec!["", "+", "-"]), 0u32..400)),
        ) {
            let fraction = if dot { format!(".{fraction}") } else { String::new() };
            proptest::prop_assume!(whole.chars().chain(fraction.chars()).any(|c| c.is_ascii_digit()));
            let suffix = match exponent {
                Some((e, s, n)) => format!("{e}{s}{n}"),
                None => suffix.to_owned(),
            };
            let value = format!("{sign}{whole}{fraction}{suffix}");
            let zero = whole.chars().chain(fraction.chars()).all(|c| c == '0' || c == '.');
            match quantity(&value) {
                Ok(()) => proptest::prop_assert!(sign != "-" || zero, "{value} is negative"),
                Err(message) => proptest::prop_assert!(sign == "-" && !zero && message == "Must not be negative.", "{value}: {message}"),
            }
        }
    }
}
