//! Recursive-descent parser over the tokens of [`super::lexer`].

use super::lexer::{Tok, Token};
use super::{ParseError, MAX_DEPTH};
use crate::ast::*;

type PResult<T> = Result<T, ParseError>;

/// Words that can never be names.
const RESERVED: [&str; 4] = ["def", "return", "for", "in"];

const STATEMENT_EXPECTED: &str = "a statement (Task, Region, Layout, IndexTaskMap, SingleTaskMap, \
GarbageCollect, CollectMemory, Backpressure, InstanceLimit, ControlReplicate, TaskSteal, def, an \
assignment or a call)";
const BODY_STMT_EXPECTED: &str =
    "a statement in the function body (an assignment, `return` or a call)";
const PROC_EXPECTED: &str = "a processor kind (CPU, GPU, OMP, IO, PY, PROC)";
const MEM_EXPECTED: &str = "a memory kind (SYSMEM, FBMEM, ZCMEM, RDMEM, SOCKMEM, VIRTUAL)";
const CONSTRAINT_EXPECTED: &str =
    "a layout constraint (SOA, AOS, C_order, F_order, Exact, Compact, Align, No_Align)";
const TYPE_EXPECTED: &str = "a parameter type (Task, IPoint, ISpace, MSpace, int, Tuple)";
const END_EXPECTED: &str = "`;` or end of line";

fn is_reserved(name: &str) -> bool {
    RESERVED.contains(&name)
}

fn describe(tok: &Tok) -> String {
    match tok {
        Tok::Ident(n) => format!("`{n}`"),
        Tok::Int(v) => format!("`{v}`"),
        Tok::Str(s) => {
            let short: String = s.chars().take(24).collect();
            let ellipsis = if s.chars().count() > 24 { "..." } else { "" };
            format!("string \"{}{ellipsis}\"", short.escape_default())
        }
        Tok::Punct(p) => format!("`{p}`"),
        Tok::Newline => "end of line".into(),
        Tok::Indent => "an indented line".into(),
        Tok::Dedent => "the end of the indented block".into(),
        Tok::Eof => "end of file".into(),
        Tok::Error { found, .. } => found.clone(),
    }
}

/// The postfix expression `kind` makes of `base` (an index or an attribute), at `base`'s span.
fn applied_to(base: Expr, kind: impl FnOnce(Box<Expr>) -> ExprKind) -> Expr {
    let span = base.span;
    Expr::new(kind(Box::new(base)), span)
}

/// The parser state: the token stream, a cursor and the current nesting depth.
pub(crate) struct Parser<'f> {
    file: &'f str,
    toks: Vec<Token>,
    pos: usize,
    depth: usize,
}

impl<'f> Parser<'f> {
    /// A parser over `toks` (which end with `Eof` or `Error`), reporting errors in `file`.
    pub(crate) fn new(file: &'f str, mut toks: Vec<Token>) -> Self {
        if !matches!(
            toks.last().map(|t| &t.tok),
            Some(Tok::Eof) | Some(Tok::Error { .. })
        ) {
            let span = toks.last().map(|t| t.span).unwrap_or(Span::new(1, 1));
            toks.push(Token {
                tok: Tok::Eof,
                span,
            });
        }
        Parser {
            file,
            toks,
            pos: 0,
            depth: 0,
        }
    }

    // --- token access ----------------------------------------------------------------------

    fn tok_at(&self, k: usize) -> &Token {
        let last = self.toks.len().saturating_sub(1);
        let i = (self.pos + k).min(last);
        // `toks` is never empty (see `new`).
        &self.toks[i]
    }

    fn peek(&self) -> &Tok {
        &self.tok_at(0).tok
    }

    fn peek_span(&self) -> Span {
        self.tok_at(0).span
    }

    fn advance(&mut self) {
        if !matches!(self.peek(), Tok::Eof | Tok::Error { .. }) {
            self.pos += 1;
        }
    }

    fn is_punct(&self, p: &str) -> bool {
        matches!(self.peek(), Tok::Punct(q) if *q == p)
    }

    fn is_punct_at(&self, k: usize, p: &str) -> bool {
        matches!(&self.tok_at(k).tok, Tok::Punct(q) if *q == p)
    }

    fn is_ident(&self, word: &str) -> bool {
        matches!(self.peek(), Tok::Ident(n) if n == word)
    }

    fn eat_punct(&mut self, p: &str) -> bool {
        if self.is_punct(p) {
            self.advance();
            true
        } else {
            false
        }
    }

    // --- errors ----------------------------------------------------------------------------

    /// An error at the current token: `expected`, found the current token. A lexical error
    /// token reports the lexer's own message instead.
    fn error(&self, expected: impl Into<String>) -> ParseError {
        let t = self.tok_at(0);
        match &t.tok {
            Tok::Error { expected, found } => {
                self.error_at(t.span, expected.clone(), found.clone())
            }
            tok => self.error_at(t.span, expected.into(), describe(tok)),
        }
    }

    fn error_at(&self, span: Span, expected: String, found: String) -> ParseError {
        ParseError {
            file: self.file.to_string(),
            line: span.line,
            col: span.col,
            expected,
            found,
        }
    }

    fn expect_punct(&mut self, p: &str, expected: impl Into<String>) -> PResult<Span> {
        let span = self.peek_span();
        if self.eat_punct(p) {
            Ok(span)
        } else {
            Err(self.error(expected))
        }
    }

    /// A name that is not a reserved word.
    fn ident(&mut self, expected: &str) -> PResult<Ident> {
        match self.peek() {
            Tok::Ident(n) if !is_reserved(n) => {
                let id = Ident {
                    name: n.clone(),
                    span: self.peek_span(),
                };
                self.advance();
                Ok(id)
            }
            _ => Err(self.error(expected)),
        }
    }

    fn enter(&mut self) -> PResult<()> {
        if self.depth >= MAX_DEPTH {
            return Err(self.error(format!("at most {MAX_DEPTH} levels of expression nesting")));
        }
        self.depth += 1;
        Ok(())
    }

    fn leave(&mut self, levels: usize) {
        self.depth = self.depth.saturating_sub(levels);
    }

    // --- statements ------------------------------------------------------------------------

    /// Parses the whole token stream.
    pub(crate) fn program(mut self) -> PResult<Program> {
        let mut stmts = Vec::new();
        loop {
            while matches!(self.peek(), Tok::Newline) || self.is_punct(";") {
                self.advance();
            }
            match self.peek() {
                Tok::Eof => break,
                Tok::Indent => {
                    return Err(self.error("a statement starting at column 1"));
                }
                _ => stmts.push(self.statement()?),
            }
        }
        Ok(Program { stmts })
    }

    /// Ends a statement: `;` (optionally followed by a newline), a newline, or a following `}`,
    /// end of block or end of file. `also` names what else could have come next.
    fn end_stmt(&mut self, also: Option<&str>) -> PResult<()> {
        match self.peek() {
            Tok::Punct(";") => {
                self.advance();
                if matches!(self.peek(), Tok::Newline) {
                    self.advance();
                }
                Ok(())
            }
            Tok::Newline => {
                self.advance();
                Ok(())
            }
            Tok::Punct("}") | Tok::Dedent | Tok::Eof => Ok(()),
            _ => Err(self.error(match also {
                Some(a) => format!("{a}, {END_EXPECTED}"),
                None => END_EXPECTED.to_string(),
            })),
        }
    }

    fn statement(&mut self) -> PResult<Stmt> {
        let span = self.peek_span();
        let word = match self.peek() {
            Tok::Ident(w) => Some(w.clone()),
            _ => None,
        };
        let keyword = match word.as_deref() {
            Some(w) => self.keyword_statement(w)?,
            None => None,
        };
        let kind = match (keyword, word.as_deref()) {
            (Some(kind), _) => kind,
            (None, Some("def")) => StmtKind::FuncDef(self.func_def()?),
            (None, Some(name)) if !is_reserved(name) && self.is_punct_at(1, "=") => {
                let target = self.ident("a variable name")?;
                self.advance(); // `=`
                let value = self.expr()?;
                self.end_stmt(None)?;
                StmtKind::Assign { target, value }
            }
            (None, _) => {
                let e = self.call_stmt(STATEMENT_EXPECTED)?;
                self.end_stmt(None)?;
                StmtKind::Expr(e)
            }
        };
        Ok(Stmt { kind, span })
    }

    /// The statement `keyword` starts when it is a statement keyword, parsed after the
    /// keyword (which it consumes); `None`, consuming nothing, for any other word.
    fn keyword_statement(&mut self, keyword: &str) -> PResult<Option<StmtKind>> {
        let parse: fn(&mut Self) -> PResult<StmtKind> = match keyword {
            "Task" => |p| Ok(StmtKind::Task(p.task_stmt()?)),
            "Region" => |p| Ok(StmtKind::Region(p.region_stmt()?)),
            "Layout" => |p| Ok(StmtKind::Layout(p.layout_stmt()?)),
            "IndexTaskMap" => |p| Ok(StmtKind::IndexTaskMap(p.task_func_map()?)),
            "SingleTaskMap" => |p| Ok(StmtKind::SingleTaskMap(p.task_func_map()?)),
            "GarbageCollect" => |p| p.collect_stmt(CollectKeyword::GarbageCollect),
            "CollectMemory" => |p| p.collect_stmt(CollectKeyword::CollectMemory),
            "Backpressure" => |p| p.backpressure_stmt(BackpressureKeyword::Backpressure),
            "InstanceLimit" => |p| p.backpressure_stmt(BackpressureKeyword::InstanceLimit),
            "ControlReplicate" => Self::control_replicate_stmt,
            "TaskSteal" => Self::task_steal_stmt,
            _ => return Ok(None),
        };
        self.advance();
        parse(self).map(Some)
    }

    /// `GarbageCollect` or `CollectMemory` (`keyword`), after the keyword.
    fn collect_stmt(&mut self, keyword: CollectKeyword) -> PResult<StmtKind> {
        let task = self.task_sel()?;
        let region = self.region_sel()?;
        self.end_stmt(None)?;
        Ok(StmtKind::GarbageCollect(CollectStmt {
            keyword,
            task,
            region,
        }))
    }

    /// `Backpressure` or `InstanceLimit` (`keyword`), after the keyword.
    fn backpressure_stmt(&mut self, keyword: BackpressureKeyword) -> PResult<StmtKind> {
        let task = self.task_sel()?;
        let limit = match self.peek() {
            Tok::Int(v) => u64::try_from(*v).unwrap_or(0),
            _ => return Err(self.error("an instance limit (a non-negative integer)")),
        };
        self.advance();
        self.end_stmt(None)?;
        Ok(StmtKind::Backpressure(BackpressureStmt {
            keyword,
            task,
            limit,
        }))
    }

    /// `ControlReplicate`, after the keyword.
    fn control_replicate_stmt(&mut self) -> PResult<StmtKind> {
        let mut tasks = vec![self.ident("the name of a task to control-replicate")?];
        while self.eat_punct(",") {
            tasks.push(self.ident("a task name after `,`")?);
        }
        self.end_stmt(Some("`,`"))?;
        Ok(StmtKind::ControlReplicate(tasks))
    }

    /// `TaskSteal`, after the keyword.
    fn task_steal_stmt(&mut self) -> PResult<StmtKind> {
        let tasks = self.task_list()?;
        let proc = self.proc_kind()?;
        let scope = match self.peek() {
            Tok::Ident(w) if w == "SAME_NODE" => StealScope::SameNode,
            Tok::Ident(w) if w == "ANY_NODE" => StealScope::AnyNode,
            _ => return Err(self.error("where thieves come from (SAME_NODE or ANY_NODE)")),
        };
        self.advance();
        self.end_stmt(None)?;
        Ok(StmtKind::TaskSteal(TaskStealStmt { tasks, proc, scope }))
    }

    /// An expression statement, which must be a call. `expected` is the message when the
    /// current token cannot start one.
    fn call_stmt(&mut self, expected: &str) -> PResult<Expr> {
        let starts_call = match self.peek() {
            Tok::Ident(n) => {
                !is_reserved(n)
                    && (self.is_punct_at(1, "(")
                        || self.is_punct_at(1, ".")
                        || self.is_punct_at(1, "["))
            }
            Tok::Punct("(") => true,
            _ => false,
        };
        if !starts_call {
            return Err(self.error(expected));
        }
        let first_span = self.peek_span();
        let first = describe(self.peek());
        let e = self.expr()?;
        match e.kind {
            ExprKind::Call { .. }
            | ExprKind::MethodCall { .. }
            | ExprKind::TupleComprehension { .. } => Ok(e),
            _ => Err(self.error_at(
                first_span,
                format!("{expected}; an expression statement must be a call"),
                format!("{first} starting an expression that is not a call"),
            )),
        }
    }

    fn task_sel(&mut self) -> PResult<TaskSel> {
        if self.eat_punct("*") {
            return Ok(TaskSel::Any);
        }
        Ok(TaskSel::Named(self.ident("a task name or `*`")?))
    }

    fn region_sel(&mut self) -> PResult<RegionSel> {
        if self.eat_punct("*") {
            return Ok(RegionSel::Any);
        }
        if let Tok::Int(v) = self.peek() {
            let v = u64::try_from(*v).unwrap_or(0);
            self.advance();
            return Ok(RegionSel::Index(v));
        }
        match self.peek() {
            Tok::Ident(n) if !is_reserved(n) => Ok(RegionSel::Named(self.ident("")?)),
            _ => Err(self.error("a region name, a region index or `*`")),
        }
    }

    fn peek_proc(&self) -> Option<ProcKind> {
        self.peek_proc_at(0)
    }

    /// `found` (what the current token is, if it is what the caller wants), consuming the
    /// token; the error `expected` when it is not.
    fn take<T>(&mut self, found: Option<T>, expected: impl Into<String>) -> PResult<T> {
        match found {
            Some(value) => {
                self.advance();
                Ok(value)
            }
            None => Err(self.error(expected)),
        }
    }

    fn proc_kind(&mut self) -> PResult<ProcKind> {
        self.take(self.peek_proc(), PROC_EXPECTED)
    }

    fn proc_sel(&mut self) -> PResult<ProcSel> {
        if self.eat_punct("*") {
            return Ok(ProcSel::Any);
        }
        let expected = format!("{PROC_EXPECTED} or `*`");
        self.take(self.peek_proc(), expected).map(ProcSel::Kind)
    }

    fn peek_mem(&self) -> Option<MemKind> {
        match self.peek() {
            Tok::Ident(n) => MemKind::from_keyword(n),
            _ => None,
        }
    }

    /// `*`, a task name, or several names separated by `,`.
    fn task_list(&mut self) -> PResult<Vec<TaskSel>> {
        let mut tasks = vec![self.task_sel()?];
        // A `,` continues the list unless a processor kind follows it (`Task a,b CPU,GPU;`
        // lists tasks first, then kinds).
        while self.is_punct(",") && self.peek_proc_at(1).is_none() {
            self.advance();
            tasks.push(self.task_sel()?);
        }
        Ok(tasks)
    }

    fn peek_proc_at(&self, k: usize) -> Option<ProcKind> {
        match &self.tok_at(k).tok {
            Tok::Ident(n) => ProcKind::from_name(n),
            _ => None,
        }
    }

    fn task_stmt(&mut self) -> PResult<TaskStmt> {
        let tasks = self.task_list()?;
        let procs = self.one_or_more(Self::proc_kind, |p| p.peek_proc().is_some())?;
        self.end_stmt(Some(&format!("`,`, {PROC_EXPECTED}")))?;
        Ok(TaskStmt { tasks, procs })
    }

    /// One or more items parsed by `item`: the first, then one after each `,` and one before
    /// each token that `starts` one without a `,`.
    fn one_or_more<T>(
        &mut self,
        item: fn(&mut Self) -> PResult<T>,
        starts: fn(&Self) -> bool,
    ) -> PResult<Vec<T>> {
        let mut items = vec![item(self)?];
        while self.eat_punct(",") || starts(self) {
            items.push(item(self)?);
        }
        Ok(items)
    }

    fn mem_kind(&mut self) -> PResult<MemKind> {
        self.take(self.peek_mem(), MEM_EXPECTED)
    }

    fn region_stmt(&mut self) -> PResult<RegionStmt> {
        let task = self.task_sel()?;
        let region = self.region_sel()?;
        let proc = self.proc_sel()?;
        let mems = self.one_or_more(Self::mem_kind, |p| p.peek_mem().is_some())?;
        self.end_stmt(Some(&format!("`,`, {MEM_EXPECTED}")))?;
        Ok(RegionStmt {
            task,
            region,
            proc,
            mems,
        })
    }

    fn constraint(&mut self) -> PResult<LayoutConstraint> {
        let word = match self.peek() {
            Tok::Ident(w) => w.clone(),
            _ => return Err(self.error(CONSTRAINT_EXPECTED)),
        };
        let c = match word.as_str() {
            "SOA" => LayoutConstraint::Soa,
            "AOS" => LayoutConstraint::Aos,
            "C_order" => LayoutConstraint::COrder,
            "F_order" => LayoutConstraint::FOrder,
            "Exact" => LayoutConstraint::Exact,
            "Compact" => LayoutConstraint::Compact,
            "No_Align" => LayoutConstraint::NoAlign,
            "Align" => {
                self.advance();
                let op = match self.peek() {
                    Tok::Punct("==") => AlignOp::Eq,
                    Tok::Punct("!=") => AlignOp::Ne,
                    Tok::Punct("<=") => AlignOp::Le,
                    Tok::Punct(">=") => AlignOp::Ge,
                    Tok::Punct("<") => AlignOp::Lt,
                    Tok::Punct(">") => AlignOp::Gt,
                    _ => {
                        return Err(self
                            .error("an alignment comparison (==, !=, <=, >=, <, >) after `Align`"))
                    }
                };
                self.advance();
                let bytes = match self.peek() {
                    Tok::Int(v) => u64::try_from(*v).unwrap_or(0),
                    _ => return Err(self.error("an alignment in bytes (an integer)")),
                };
                self.advance();
                return Ok(LayoutConstraint::Align { op, bytes });
            }
            _ => return Err(self.error(CONSTRAINT_EXPECTED)),
        };
        self.advance();
        Ok(c)
    }

    fn layout_stmt(&mut self) -> PResult<LayoutStmt> {
        let task = self.task_sel()?;
        let region = self.region_sel()?;
        // The third field is a processor kind (the manual) or a memory kind (the reference
        // compiler's grammar).
        let (proc, mem) = match self.peek_mem() {
            Some(m) => {
                self.advance();
                (ProcSel::Any, Some(m))
            }
            None => (
                self.proc_sel()
                    .map_err(|_| self.error(format!("{PROC_EXPECTED}, {MEM_EXPECTED} or `*`")))?,
                None,
            ),
        };
        let mut constraints = Vec::new();
        loop {
            if self.eat_punct(",") || matches!(self.peek(), Tok::Ident(_)) {
                constraints.push(self.constraint()?);
            } else {
                break;
            }
        }
        self.end_stmt(Some(&format!("`,`, {CONSTRAINT_EXPECTED}")))?;
        Ok(LayoutStmt {
            task,
            region,
            proc,
            mem,
            constraints,
        })
    }

    fn task_func_map(&mut self) -> PResult<TaskFuncMap> {
        // `IndexTaskMap GPU f;` maps every task that runs on GPUs (the reference compiler's
        // form); otherwise a list of task names or `*`.
        if let Some(kind) = self.peek_proc() {
            self.advance();
            let func = self.ident("the name of the mapping function")?;
            self.end_stmt(None)?;
            return Ok(TaskFuncMap {
                tasks: vec![TaskSel::Kind(kind)],
                func,
            });
        }
        let mut tasks = vec![self.task_sel()?];
        while self.eat_punct(",") {
            tasks.push(self.task_sel()?);
        }
        let func = self.ident("`,` or the name of the mapping function")?;
        self.end_stmt(None)?;
        Ok(TaskFuncMap { tasks, func })
    }

    // --- functions -------------------------------------------------------------------------

    fn func_def(&mut self) -> PResult<FuncDef> {
        self.advance(); // `def`
        let name = self.ident("a function name")?;
        let open = self.expect_punct("(", "`(` after the function name")?;
        let mut params = Vec::new();
        if !self.eat_punct(")") {
            loop {
                params.push(self.param()?);
                if self.eat_punct(",") {
                    continue;
                }
                self.expect_punct(")", format!("`,` or `)` (to close `(` at {open})"))?;
                break;
            }
        }
        let (body, style) = if self.is_punct("{") {
            (self.brace_body()?, BodyStyle::Braces)
        } else if self.is_punct(":") {
            (self.indented_body()?, BodyStyle::Indented)
        } else {
            return Err(self.error("`{` or `:` to start the function body"));
        };
        Ok(FuncDef {
            name,
            params,
            body,
            style,
        })
    }

    fn param(&mut self) -> PResult<Param> {
        let span = self.peek_span();
        let first = self.ident(&format!("{TYPE_EXPECTED} or a parameter name"))?;
        if matches!(self.peek(), Tok::Ident(_)) {
            let Some(ty) = ParamType::from_keyword(&first.name) else {
                return Err(self.error_at(
                    first.span,
                    TYPE_EXPECTED.into(),
                    format!("`{}`", first.name),
                ));
            };
            let name = self.ident("a parameter name")?;
            Ok(Param {
                ty: Some(ty),
                name,
                span,
            })
        } else if ParamType::from_keyword(&first.name).is_some() {
            Err(self.error(format!("a parameter name after the type `{}`", first.name)))
        } else {
            Ok(Param {
                ty: None,
                name: first,
                span,
            })
        }
    }

    fn brace_body(&mut self) -> PResult<Vec<FuncStmt>> {
        let open = self.peek_span();
        self.advance(); // `{`
        let mut body = Vec::new();
        loop {
            while matches!(self.peek(), Tok::Newline) || self.is_punct(";") {
                self.advance();
            }
            if self.eat_punct("}") {
                return Ok(body);
            }
            if matches!(self.peek(), Tok::Eof) {
                return Err(self.error(format!("`}}` to close `{{` at {open}")));
            }
            body.push(self.body_stmt()?);
        }
    }

    fn indented_body(&mut self) -> PResult<Vec<FuncStmt>> {
        self.advance(); // `:`
        let mut body = Vec::new();
        if !matches!(self.peek(), Tok::Newline) {
            // Statements on the same line as the `:`.
            loop {
                body.push(self.body_stmt_unterminated()?);
                match self.peek() {
                    Tok::Punct(";") => {
                        self.advance();
                        if matches!(self.peek(), Tok::Newline) {
                            self.advance();
                            return Ok(body);
                        }
                        if matches!(self.peek(), Tok::Eof) {
                            return Ok(body);
                        }
                    }
                    Tok::Newline => {
                        self.advance();
                        return Ok(body);
                    }
                    Tok::Eof => return Ok(body),
                    _ => return Err(self.error(END_EXPECTED)),
                }
            }
        }
        self.advance(); // newline
        if !matches!(self.peek(), Tok::Indent) {
            return Err(self.error("an indented block (the function body)"));
        }
        self.advance();
        loop {
            while matches!(self.peek(), Tok::Newline) || self.is_punct(";") {
                self.advance();
            }
            match self.peek() {
                Tok::Dedent => {
                    self.advance();
                    return Ok(body);
                }
                Tok::Eof => return Ok(body),
                Tok::Indent => {
                    return Err(self.error(format!(
                        "{BODY_STMT_EXPECTED} at the indentation of the block"
                    )))
                }
                _ => body.push(self.body_stmt()?),
            }
        }
    }

    fn body_stmt(&mut self) -> PResult<FuncStmt> {
        let s = self.body_stmt_unterminated()?;
        self.end_stmt(None)?;
        Ok(s)
    }

    fn body_stmt_unterminated(&mut self) -> PResult<FuncStmt> {
        let span = self.peek_span();
        let kind = match self.peek() {
            Tok::Ident(w) if w == "return" => {
                self.advance();
                FuncStmtKind::Return(self.expr()?)
            }
            Tok::Ident(w) if !is_reserved(w) && self.is_punct_at(1, "=") => {
                let target = self.ident("a variable name")?;
                self.advance(); // `=`
                FuncStmtKind::Assign {
                    target,
                    value: self.expr()?,
                }
            }
            _ => FuncStmtKind::Expr(self.call_stmt(BODY_STMT_EXPECTED)?),
        };
        Ok(FuncStmt { kind, span })
    }

    // --- expressions -----------------------------------------------------------------------

    /// A full expression (ternary level).
    fn expr(&mut self) -> PResult<Expr> {
        self.enter()?;
        let e = self.ternary()?;
        self.leave(1);
        Ok(e)
    }

    fn ternary(&mut self) -> PResult<Expr> {
        let cond = self.binary(1)?;
        if !self.is_punct("?") {
            return Ok(cond);
        }
        self.advance();
        let then = self.expr()?;
        self.expect_punct(":", "`:` of the conditional expression `c ? a : b`")?;
        let otherwise = self.expr()?;
        let span = cond.span;
        Ok(Expr::new(
            ExprKind::Ternary {
                cond: Box::new(cond),
                then: Box::new(then),
                otherwise: Box::new(otherwise),
            },
            span,
        ))
    }

    fn peek_binop(&self) -> Option<BinaryOp> {
        let Tok::Punct(p) = self.peek() else {
            return None;
        };
        Some(match *p {
            "||" => BinaryOp::Or,
            "&&" => BinaryOp::And,
            "==" => BinaryOp::Eq,
            "!=" => BinaryOp::Ne,
            "<" => BinaryOp::Lt,
            "<=" => BinaryOp::Le,
            ">" => BinaryOp::Gt,
            ">=" => BinaryOp::Ge,
            "+" => BinaryOp::Add,
            "-" => BinaryOp::Sub,
            "*" => BinaryOp::Mul,
            "/" => BinaryOp::Div,
            "%" => BinaryOp::Rem,
            _ => return None,
        })
    }

    /// Precedence climbing over the binary operators binding at least as tightly as `min`.
    fn binary(&mut self, min: u8) -> PResult<Expr> {
        let mut lhs = self.unary()?;
        let mut levels = 0;
        while let Some(op) = self.peek_binop() {
            let prec = op.precedence();
            if prec < min {
                break;
            }
            self.enter()?;
            levels += 1;
            self.advance();
            let rhs = self.binary(prec + 1)?;
            let span = lhs.span;
            lhs = Expr::new(
                ExprKind::Binary {
                    op,
                    lhs: Box::new(lhs),
                    rhs: Box::new(rhs),
                },
                span,
            );
        }
        self.leave(levels);
        Ok(lhs)
    }

    fn unary(&mut self) -> PResult<Expr> {
        let op = match self.peek() {
            Tok::Punct("-") => UnaryOp::Neg,
            Tok::Punct("!") => UnaryOp::Not,
            _ => return self.postfix(),
        };
        let span = self.peek_span();
        self.enter()?;
        self.advance();
        let operand = self.unary()?;
        self.leave(1);
        Ok(Expr::new(
            ExprKind::Unary {
                op,
                operand: Box::new(operand),
            },
            span,
        ))
    }

    fn postfix(&mut self) -> PResult<Expr> {
        let mut e = self.primary()?;
        let mut levels = 0;
        loop {
            if self.is_punct("(") {
                self.enter()?;
                levels += 1;
                let span = e.span;
                e = match e.kind {
                    ExprKind::Name(name) => {
                        let func = Ident { name, span };
                        if func.name == "tuple" {
                            self.tuple_call(func)?
                        } else {
                            let args = self.call_args()?;
                            Expr::new(ExprKind::Call { func, args }, span)
                        }
                    }
                    ExprKind::Attr { base, attr } => {
                        let args = self.call_args()?;
                        Expr::new(
                            ExprKind::MethodCall {
                                receiver: base,
                                method: attr,
                                args,
                            },
                            span,
                        )
                    }
                    _ => {
                        return Err(self.error(format!(
                            "an operator or {END_EXPECTED} (only names and methods can be called)"
                        )))
                    }
                };
            } else if self.is_punct("[") {
                self.enter()?;
                levels += 1;
                let indices = self.index_list()?;
                e = applied_to(e, |base| ExprKind::Index { base, indices });
            } else if self.is_punct(".") {
                self.enter()?;
                levels += 1;
                self.advance();
                let attr = self.ident("an attribute or method name after `.`")?;
                e = applied_to(e, |base| ExprKind::Attr { base, attr });
            } else {
                break;
            }
        }
        self.leave(levels);
        Ok(e)
    }

    /// One element of a tuple literal or argument list: `*e` or `e`.
    fn list_elem(&mut self) -> PResult<Expr> {
        if self.is_punct("*") {
            let span = self.peek_span();
            self.advance();
            let inner = self.expr()?;
            return Ok(Expr::new(ExprKind::Unpack(Box::new(inner)), span));
        }
        self.expr()
    }

    /// `( args )`, the current token being `(`.
    fn call_args(&mut self) -> PResult<Vec<Expr>> {
        let open = self.peek_span();
        self.advance();
        let mut args = Vec::new();
        if self.eat_punct(")") {
            return Ok(args);
        }
        loop {
            args.push(self.list_elem()?);
            if self.list_ended(")", "(", open)? {
                return Ok(args);
            }
        }
    }

    /// After an element of a list that `close` ends (opened by `opening` at `open`): true
    /// once the list has ended, at a `close` after an optional trailing `,`; false after a
    /// `,` that another element follows.
    fn list_ended(&mut self, close: &str, opening: &str, open: Span) -> PResult<bool> {
        if self.eat_punct(",") {
            return Ok(self.eat_punct(close));
        }
        self.expect_punct(
            close,
            format!("`,` or `{close}` (to close `{opening}` at {open})"),
        )?;
        Ok(true)
    }

    /// `tuple(...)`: either a call of the builtin or a comprehension
    /// `tuple(element for var in iter)`.
    fn tuple_call(&mut self, func: Ident) -> PResult<Expr> {
        let span = func.span;
        let open = self.peek_span();
        self.advance(); // `(`
        if self.eat_punct(")") {
            return Ok(Expr::new(
                ExprKind::Call {
                    func,
                    args: Vec::new(),
                },
                span,
            ));
        }
        let first = self.list_elem()?;
        if self.is_ident("for") && !matches!(first.kind, ExprKind::Unpack(_)) {
            self.advance();
            let var = self.ident("a loop variable name after `for`")?;
            if !self.is_ident("in") {
                return Err(self.error("`in` after the loop variable"));
            }
            self.advance();
            let iter = self.expr()?;
            self.expect_punct(")", format!("`)` (to close `(` at {open})"))?;
            return Ok(Expr::new(
                ExprKind::TupleComprehension {
                    element: Box::new(first),
                    var,
                    iter: Box::new(iter),
                },
                span,
            ));
        }
        let mut args = vec![first];
        loop {
            if self.eat_punct(",") {
                if self.eat_punct(")") {
                    break;
                }
                args.push(self.list_elem()?);
                continue;
            }
            self.expect_punct(")", format!("`,`, `for` or `)` (to close `(` at {open})"))?;
            break;
        }
        Ok(Expr::new(ExprKind::Call { func, args }, span))
    }

    /// `[ elems ]`, the current token being `[`.
    fn index_list(&mut self) -> PResult<Vec<Expr>> {
        let open = self.peek_span();
        self.advance();
        let mut elems = Vec::new();
        loop {
            let span = self.peek_span();
            let elem =
                if self.is_punct("*") && (self.is_punct_at(1, ",") || self.is_punct_at(1, "]")) {
                    self.advance();
                    Expr::new(ExprKind::Wildcard, span)
                } else if self.is_punct("*") {
                    self.list_elem()?
                } else {
                    let start = if self.is_punct(":") {
                        None
                    } else if self.is_punct("]") && elems.is_empty() {
                        return Err(self.error("an index expression"));
                    } else {
                        Some(self.expr()?)
                    };
                    if self.eat_punct(":") {
                        let end = if self.is_punct(",") || self.is_punct("]") {
                            None
                        } else {
                            Some(Box::new(self.expr()?))
                        };
                        Expr::new(
                            ExprKind::Slice {
                                start: start.map(Box::new),
                                end,
                            },
                            span,
                        )
                    } else {
                        match start {
                            Some(e) => e,
                            None => return Err(self.error("an index expression")),
                        }
                    }
                };
            elems.push(elem);
            if self.list_ended("]", "[", open)? {
                return Ok(elems);
            }
        }
    }

    fn primary(&mut self) -> PResult<Expr> {
        let span = self.peek_span();
        match self.peek().clone() {
            Tok::Int(v) => {
                self.advance();
                Ok(Expr::new(ExprKind::Int(v), span))
            }
            Tok::Str(s) => {
                self.advance();
                Ok(Expr::new(ExprKind::Str(s), span))
            }
            Tok::Ident(n) if is_reserved(&n) => Err(self.error("an expression")),
            Tok::Ident(n) if n == "Machine" && self.is_punct_at(1, "(") => {
                self.advance();
                let open = self.peek_span();
                self.advance();
                let kind = self.proc_kind()?;
                self.expect_punct(")", format!("`)` (to close `(` at {open})"))?;
                Ok(Expr::new(ExprKind::Machine(kind), span))
            }
            Tok::Ident(n) => {
                self.advance();
                Ok(Expr::new(ExprKind::Name(n), span))
            }
            Tok::Punct("(") => self.paren(),
            _ => Err(self.error("an expression")),
        }
    }

    /// `( )`, `( e )`, `( e, )`, `( e1, e2, ... )`; newlines inside are insignificant.
    fn paren(&mut self) -> PResult<Expr> {
        let open = self.peek_span();
        self.advance();
        if self.eat_punct(")") {
            return Ok(Expr::new(ExprKind::Tuple(Vec::new()), open));
        }
        let first = self.list_elem()?;
        if self.eat_punct(")") {
            if matches!(first.kind, ExprKind::Unpack(_)) {
                return Ok(Expr::new(ExprKind::Tuple(vec![first]), open));
            }
            let mut inner = first;
            inner.span = open;
            return Ok(inner);
        }
        let mut items = vec![first];
        loop {
            self.expect_punct(",", format!("`,` or `)` (to close `(` at {open})"))?;
            if self.eat_punct(")") {
                break;
            }
            items.push(self.list_elem()?);
            if self.eat_punct(")") {
                break;
            }
        }
        Ok(Expr::new(ExprKind::Tuple(items), open))
    }
}
