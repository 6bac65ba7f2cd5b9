//! The values statements take and rows give back: SQLite's storage classes (null, integer,
//! real, text, blob), which PostgreSQL's columns of the translated schemas map onto.

use std::sync::Arc;

use crate::{Result, SqlError};

#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Null,
    Int(i64),
    Real(f64),
    Text(String),
    Blob(Vec<u8>),
}

impl Value {
    pub(crate) fn from_sqlite(v: rusqlite::types::ValueRef<'_>) -> Value {
        use rusqlite::types::ValueRef;
        match v {
            ValueRef::Null => Value::Null,
            ValueRef::Integer(i) => Value::Int(i),
            ValueRef::Real(f) => Value::Real(f),
            ValueRef::Text(t) => Value::Text(String::from_utf8_lossy(t).into_owned()),
            ValueRef::Blob(b) => Value::Blob(b.to_vec()),
        }
    }

    fn kind(&self) -> &'static str {
        match self {
            Value::Null => "null",
            Value::Int(_) => "integer",
            Value::Real(_) => "real",
            Value::Text(_) => "text",
            Value::Blob(_) => "blob",
        }
    }
}

impl rusqlite::ToSql for Value {
    fn to_sql(&self) -> rusqlite::Result<rusqlite::types::ToSqlOutput<'_>> {
        use rusqlite::types::{ToSqlOutput, ValueRef};
        Ok(ToSqlOutput::Borrowed(match self {
            Value::Null => ValueRef::Null,
            Value::Int(i) => ValueRef::Integer(*i),
            Value::Real(f) => ValueRef::Real(*f),
            Value::Text(s) => ValueRef::Text(s.as_bytes()),
            Value::Blob(b) => ValueRef::Blob(b),
        }))
    }
}

/// What can be a statement parameter (see [`params!`](crate::params)).
pub trait ToValue {
    fn to_value(&self) -> Value;
}

impl ToValue for Value {
    fn to_value(&self) -> Value {
        self.clone()
    }
}
impl ToValue for str {
    fn to_value(&self) -> Value {
        Value::Text(self.to_string())
    }
}
impl ToValue for String {
    fn to_value(&self) -> Value {
        Value::Text(self.clone())
    }
}
impl ToValue for std::borrow::Cow<'_, str> {
    fn to_value(&self) -> Value {
        Value::Text(self.to_string())
    }
}
impl ToValue for bool {
    fn to_value(&self) -> Value {
        Value::Int(i64::from(*self))
    }
}
impl ToValue for f64 {
    fn to_value(&self) -> Value {
        Value::Real(*self)
    }
}
impl ToValue for Vec<u8> {
    fn to_value(&self) -> Value {
        Value::Blob(self.clone())
    }
}
macro_rules! int_value {
    ($($t:ty),*) => {$(
        impl ToValue for $t {
            fn to_value(&self) -> Value {
                Value::Int(i64::try_from(*self).unwrap_or(i64::MAX))
            }
        }
    )*};
}
int_value!(i64, i32, u32, u64, usize, u16, i16, u8);

impl<T: ToValue + ?Sized> ToValue for &T {
    fn to_value(&self) -> Value {
        (**self).to_value()
    }
}
impl<T: ToValue> ToValue for Option<T> {
    fn to_value(&self) -> Value {
        self.as_ref().map_or(Value::Null, ToValue::to_value)
    }
}

/// One result row: the column names (shared by the rows of a query) and the values.
#[derive(Debug, Clone)]
pub struct Row {
    columns: Arc<[String]>,
    values: Vec<Value>,
}

/// A column by position or by name.
pub trait ColumnIndex {
    fn index(&self, row: &Row) -> Result<usize>;
}

impl ColumnIndex for usize {
    fn index(&self, row: &Row) -> Result<usize> {
        if *self < row.values.len() {
            Ok(*self)
        } else {
            Err(SqlError::NoColumn(self.to_string()))
        }
    }
}

impl ColumnIndex for &str {
    fn index(&self, row: &Row) -> Result<usize> {
        row.columns
            .iter()
            .position(|c| c == self)
            .ok_or_else(|| SqlError::NoColumn((*self).to_string()))
    }
}

impl Row {
    pub(crate) fn new(columns: Arc<[String]>, values: Vec<Value>) -> Row {
        Row { columns, values }
    }

    pub fn columns(&self) -> &[String] {
        &self.columns
    }

    pub fn values(&self) -> &[Value] {
        &self.values
    }

    /// The value of a column as `T`.
    pub fn get<T: FromValue>(&self, idx: impl ColumnIndex) -> Result<T> {
        let i = idx.index(self)?;
        T::from_value(&self.values[i]).map_err(|expected| SqlError::Type {
            column: self.columns[i].clone(),
            expected,
            found: self.values[i].kind(),
        })
    }
}

/// What a column's value can be read as; the error names what was expected.
pub trait FromValue: Sized {
    fn from_value(v: &Value) -> std::result::Result<Self, &'static str>;
}

impl FromValue for i64 {
    fn from_value(v: &Value) -> std::result::Result<Self, &'static str> {
        match v {
            Value::Int(i) => Ok(*i),
            _ => Err("integer"),
        }
    }
}
impl FromValue for f64 {
    fn from_value(v: &Value) -> std::result::Result<Self, &'static str> {
        match v {
            Value::Real(f) => Ok(*f),
            Value::Int(i) => Ok(*i as f64),
            _ => Err("real"),
        }
    }
}
impl FromValue for String {
    fn from_value(v: &Value) -> std::result::Result<Self, &'static str> {
        match v {
            Value::Text(s) => Ok(s.clone()),
            _ => Err("text"),
        }
    }
}
impl FromValue for Value {
    fn from_value(v: &Value) -> std::result::Result<Self, &'static str> {
        Ok(v.clone())
    }
}
impl<T: FromValue> FromValue for Option<T> {
    fn from_value(v: &Value) -> std::result::Result<Self, &'static str> {
        match v {
            Value::Null => Ok(None),
            other => T::from_value(other).map(Some),
        }
    }
}
