/*
 * The layout of QVR as tokens: NEWLINE, INDENT and DEDENT (qvr_core/syntax/layout.py's
 * logical lines and blocks).
 *
 * Each token is zero-width, at the end of the line it closes: the scanner looks ahead
 * over blank lines and comments to the first character of the next line of code, measures
 * its indentation, and answers with one token or none; the line break and the comments
 * are then read as extras. The indentation of each open block is kept on a stack.
 *
 * A token is given only where the grammar accepts it, which is how a line runs on: inside
 * brackets, and after anything that cannot end a line (`factor v : V in`, `rule r` with
 * its premises below), no NEWLINE is valid, so the line break is a blank. Inside a block,
 * a deeper line below a line that takes no body continues that line too (qvr joins it).
 */

#include "tree_sitter/parser.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum TokenType {
  NEWLINE,
  INDENT,
  DEDENT,
  ERROR_SENTINEL,
  LAYOUT_ERROR,
  /* never given here: whether one is valid says whether a bracket is open */
  CLOSE_PAREN,
  CLOSE_BRACKET,
  CLOSE_BRACE,
};

#define MAX_DEPTH 256 /* qvr nests 64 levels at most; 2 bytes a level fit the state */
#define TAB_WIDTH 4

typedef struct {
  uint32_t depth;
  uint16_t indents[MAX_DEPTH]; /* indents[0] is 0, the top level */
} Scanner;

static void skip(TSLexer *lexer) { lexer->advance(lexer, true); }

static bool is_line_end(int32_t c) { return c == '\n' || c == '\r'; }

static bool is_word_char(int32_t c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
         c == '_' || c > 0x7f;
}

void *tree_sitter_qvr_external_scanner_create(void) {
  Scanner *scanner = calloc(1, sizeof(Scanner));
  if (scanner) scanner->depth = 1;
  return scanner;
}

void tree_sitter_qvr_external_scanner_destroy(void *payload) { free(payload); }

unsigned tree_sitter_qvr_external_scanner_serialize(void *payload, char *buffer) {
  Scanner *scanner = payload;
  unsigned size = 0;
  /* indents[0] is always 0 and is not written */
  for (uint32_t i = 1; i < scanner->depth; i++) {
    if (size + 2 > TREE_SITTER_SERIALIZATION_BUFFER_SIZE) break;
    buffer[size++] = (char)(scanner->indents[i] & 0xff);
    buffer[size++] = (char)(scanner->indents[i] >> 8);
  }
  return size;
}

void tree_sitter_qvr_external_scanner_deserialize(void *payload, const char *buffer,
                                                  unsigned length) {
  Scanner *scanner = payload;
  scanner->depth = 1;
  scanner->indents[0] = 0;
  for (unsigned i = 0; i + 1 < length && scanner->depth < MAX_DEPTH; i += 2) {
    uint16_t low = (uint8_t)buffer[i];
    uint16_t high = (uint8_t)buffer[i + 1];
    scanner->indents[scanner->depth++] = (uint16_t)(low | (high << 8));
  }
}

/* Reads the word at the lexer (advancing over it) into `word`, at most `size - 1` chars. */
static void read_word(TSLexer *lexer, char *word, unsigned size) {
  unsigned n = 0;
  while (is_word_char(lexer->lookahead)) {
    if (n + 1 < size) word[n++] = (char)(lexer->lookahead < 0x80 ? lexer->lookahead : '?');
    skip(lexer);
  }
  word[n] = '\0';
}

bool tree_sitter_qvr_external_scanner_scan(void *payload, TSLexer *lexer,
                                           const bool *valid_symbols) {
  Scanner *scanner = payload;
  bool error_recovery = valid_symbols[ERROR_SENTINEL];
  bool within_brackets =
      valid_symbols[CLOSE_PAREN] || valid_symbols[CLOSE_BRACKET] || valid_symbols[CLOSE_BRACE];

  lexer->mark_end(lexer); /* every token is zero-width, here */

  bool found_line_end = false;
  uint32_t indent = 0;
  int32_t first_comment_indent = -1;

  for (;;) {
    int32_t c = lexer->lookahead;
    if (c == '\n' || c == '\r') {
      found_line_end = true;
      indent = 0;
      skip(lexer);
    } else if (c == ' ') {
      indent++;
      skip(lexer);
    } else if (c == '\t') {
      indent += TAB_WIDTH;
      skip(lexer);
    } else if (c == '\f' || c == '\v' || c == 0xFEFF) {
      skip(lexer);
    } else if (c == '#') {
      skip(lexer);
      bool pragma = lexer->lookahead == '[';
      if (lexer->lookahead == '!') {
        skip(lexer);
        pragma = lexer->lookahead == '[';
      }
      if (pragma) break; /* `#[` and `#![` open pragmas: code */
      if (!found_line_end) return false; /* a comment after code: read it first */
      if (first_comment_indent == -1) first_comment_indent = (int32_t)indent;
      while (lexer->lookahead != 0 && !is_line_end(lexer->lookahead)) skip(lexer);
    } else if (lexer->eof(lexer)) {
      found_line_end = true;
      indent = 0;
      break;
    } else {
      break;
    }
  }

  if (!found_line_end) return false;

  uint16_t current = scanner->indents[scanner->depth - 1];

  /* A deeper line that cannot be the body of this one, outside brackets: inside a block
   * it continues this line, as qvr joins it onto the line above (and reports the two as
   * misaligned when the joined line does not parse); at the top level, where qvr joins
   * nothing, it is an error (LAYOUT_ERROR is valid nowhere). A deeper line that starts
   * with `over` or `in` continues a `marginalize` line: the braced scope of quivers
   * 0.4 - 0.10 (`marginalize z <- F(..)` / `over G` / `in { ... }`). */
  if (indent > current && !lexer->eof(lexer) && !error_recovery && !within_brackets) {
    if (!valid_symbols[INDENT]) {
      if (scanner->depth > 1) return false;
      lexer->result_symbol = LAYOUT_ERROR;
      return true;
    }
    if (is_word_char(lexer->lookahead)) {
      char word[8];
      read_word(lexer, word, sizeof word);
      if (strcmp(word, "over") == 0 || strcmp(word, "in") == 0) return false;
    }
  }

  if (valid_symbols[INDENT] && indent > current && scanner->depth < MAX_DEPTH) {
    scanner->indents[scanner->depth++] = (uint16_t)(indent > 0xffff ? 0xffff : indent);
    lexer->result_symbol = INDENT;
    return true;
  }

  /* A comment at the indentation of the block still belongs to it: the block ends after
   * the comment, when the scanner is asked again. A line that goes back to a column no
   * open block starts at is misaligned (qvr's "inconsistent indentation"), unless it
   * closes a bracket (the `}` of a braced block). */
  if (indent < current && scanner->depth > 1 &&
      (valid_symbols[DEDENT] || (!valid_symbols[NEWLINE] && !within_brackets)) &&
      first_comment_indent < (int32_t)current) {
    int32_t first = lexer->lookahead;
    if (!error_recovery && !within_brackets && first != ')' && first != ']' && first != '}') {
      bool aligned = false;
      for (uint32_t i = 0; i < scanner->depth && !aligned; i++) {
        aligned = scanner->indents[i] == indent;
      }
      if (!aligned) {
        lexer->result_symbol = LAYOUT_ERROR;
        return true;
      }
    }
    scanner->depth--;
    lexer->result_symbol = DEDENT;
    return true;
  }

  if (valid_symbols[NEWLINE] && !error_recovery) {
    lexer->result_symbol = NEWLINE;
    return true;
  }

  return false;
}
