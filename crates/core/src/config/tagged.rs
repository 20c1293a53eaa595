//! Configuration objects carry their type id as their first key. serde's internally tagged
//! enums buffer the whole object before choosing a variant, which loses the config path of any
//! error inside it. Ours read the type key first (the TypeScript side always writes it first)
//! and hand the rest of the very same map to the variant, so errors keep their full path
//! (`learner.trainer.hooks[0].margin`). Serialisation writes the type key first as well.

use std::fmt;
use std::marker::PhantomData;
use std::ops::Deref;

use serde::de::{Error as _, MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::TYPE_KEY;

/// Reads the type key that must open a configuration object.
pub(crate) fn read_type_key<'de, A: MapAccess<'de>>(
    map: &mut A,
    accepted: &[&str],
) -> Result<String, A::Error> {
    let key: Option<String> = map.next_key()?;
    if key.as_deref() != Some(TYPE_KEY) {
        return Err(A::Error::custom(format!(
            "the first key of this object must be {TYPE_KEY:?} (one of {accepted:?}), found {:?}",
            key.unwrap_or_default()
        )));
    }
    map.next_value()
}

/// Writes `value` (which must serialise as a map) after the type key.
pub(crate) fn write_tagged<S: Serializer, T: Serialize>(
    serializer: S,
    tag: &str,
    value: &T,
) -> Result<S::Ok, S::Error> {
    use serde::ser::Error as _;
    let fields = match serde_json::to_value(value).map_err(S::Error::custom)? {
        serde_json::Value::Object(fields) => fields,
        _ => {
            return Err(S::Error::custom(
                "a configuration must serialise as an object",
            ))
        }
    };
    let mut map = serializer.serialize_map(Some(fields.len() + 1))?;
    map.serialize_entry(TYPE_KEY, tag)?;
    for (k, v) in &fields {
        map.serialize_entry(k, v)?;
    }
    map.end()
}

/// A configuration class with a single type id.
pub trait ConfigType {
    /// The Python-compatible type id, case preserved.
    const TYPE_ID: &'static str;
}

/// A position holding exactly one configuration class: checks the type key and derefs to `T`.
#[derive(Debug, Clone, PartialEq)]
pub struct Typed<T>(pub T);

impl<T> Deref for Typed<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

impl<'de, T: ConfigType + Deserialize<'de>> Deserialize<'de> for Typed<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Reader<T>(PhantomData<T>);
        impl<'de, T: ConfigType + Deserialize<'de>> Visitor<'de> for Reader<T> {
            type Value = Typed<T>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "a {} configuration", T::TYPE_ID)
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Typed<T>, A::Error> {
                let tag = read_type_key(&mut map, &[T::TYPE_ID])?;
                if tag != T::TYPE_ID {
                    return Err(A::Error::invalid_value(
                        serde::de::Unexpected::Str(&tag),
                        &T::TYPE_ID,
                    ));
                }
                T::deserialize(serde::de::value::MapAccessDeserializer::new(map)).map(Typed)
            }
        }
        deserializer.deserialize_map(Reader(PhantomData))
    }
}

impl<T: ConfigType + Serialize> Serialize for Typed<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        write_tagged(serializer, T::TYPE_ID, &self.0)
    }
}

/// Declares a configuration enum whose variants are chosen by the type key.
macro_rules! config_enum {
    (
        $(#[$meta:meta])*
        pub enum $name:ident {
            $( $(#[$vmeta:meta])* $variant:ident($ty:ty) = $tag:literal, )+
        }
    ) => {
        $(#[$meta])*
        pub enum $name {
            $( $(#[$vmeta])* $variant($ty), )+
        }

        impl $name {
            /// The type ids this position accepts.
            pub const TYPE_IDS: &'static [&'static str] = &[$($tag),+];

            /// The type id of this value.
            pub fn type_id(&self) -> &'static str {
                match self {
                    $( $name::$variant(_) => $tag, )+
                }
            }
        }

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                struct Chooser;
                impl<'de> serde::de::Visitor<'de> for Chooser {
                    type Value = $name;

                    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                        write!(f, "a configuration object, one of {:?}", $name::TYPE_IDS)
                    }

                    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<$name, A::Error> {
                        use serde::de::Error as _;
                        let tag = $crate::config::tagged::read_type_key(&mut map, $name::TYPE_IDS)?;
                        let rest = serde::de::value::MapAccessDeserializer::new(map);
                        match tag.as_str() {
                            $( $tag => <$ty as serde::Deserialize>::deserialize(rest).map($name::$variant), )+
                            other => Err(A::Error::unknown_variant(other, $name::TYPE_IDS)),
                        }
                    }
                }
                deserializer.deserialize_map(Chooser)
            }
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                match self {
                    $( $name::$variant(v) => $crate::config::tagged::write_tagged(serializer, $tag, v), )+
                }
            }
        }
    };
}

pub(crate) use config_enum;
