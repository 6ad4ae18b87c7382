//===--- FunctionSummary.h - metaguard-tidy --------------------*- C++ -*-===//
//
// Facts about one function that the checks use at its call sites instead of
// looking into its body. Facts, never findings: a finding is reported where
// the mistake is written.
//
// The facts come in facets, each a struct of its own that the facet defines
// next to the analysis that computes it (DeviceFacts, LoadFacts, ModelFacts,
// OptionsFacts...): a FunctionSummary holds one of each that has something
// to say, and knows none of them by name. A facet's struct says how it reads
// and writes itself as JSON and how two versions of it merge (FacetKind), so
// that the summary engine, the facts files and metaguard-tidy's merge serve
// any facet without being told about it.
//
// Summaries are computed bottom-up inside a translation unit
// (FunctionSummaries.h) and can be exported to, and read back from, a facts
// file so that a call into another translation unit uses them too
// (whole-program mode, WholeProgram.h). They are keyed by the function's
// USR, which is the same in every TU.
//
// Facts file (JSON), one object per function: "usr", "name", then the keys
// of each facet (each facet's header lists its own). Absent keys take the
// facet's defaults, and keys no facet knows are ignored, so files of older
// and newer plugins stay readable.
//
//===----------------------------------------------------------------------===//

#ifndef METAGUARD_CHECKS_UTILS_SUMMARIES_FUNCTIONSUMMARY_H
#define METAGUARD_CHECKS_UTILS_SUMMARIES_FUNCTIONSUMMARY_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"

#include <nlohmann/json_fwd.hpp>

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace clang::tidy::metaguard {

/// Where a fact comes from: the line a note points at. A file path rather
/// than a SourceLocation, so that it survives the translation unit.
struct SourceRef {
  std::string File;
  unsigned Line = 0;
  unsigned Column = 0;
  bool valid() const { return !File.empty() && Line != 0; }
  bool operator==(const SourceRef &O) const {
    return Line == O.Line && Column == O.Column && File == O.File;
  }
  bool operator!=(const SourceRef &O) const { return !(*this == O); }
};

class FactReader;
using FactJson = nlohmann::ordered_json;

/// How the versions of one fact that several translation units export for
/// one function (an inline function seen by many) become one, when they do
/// not agree (an ODR violation, a header compiled with other macros). The
/// merge is conservative: a fact they disagree on becomes its "unknown"
/// value or is dropped, so no finding is ever built on a disputed fact.
/// Facts files carry their facets' rules, so that metaguard-tidy merges
/// without knowing any facet (SummaryMerge.h has the algorithm).
struct MergeRule {
  enum class Kind {
    Agree, ///< A value both versions must give; else Disputed.
    All,   ///< A yes/no fact: yes only where every version says yes.
    Each,  ///< A list of items identified by the key By, each with Items.
  };
  std::string Key;
  Kind How = Kind::All;
  std::string Default;  ///< An Agree fact's value when the key is absent.
  std::string Disputed; ///< An Agree fact's value when versions differ.
  /// Keys that explain the fact (where, through what) and go with it when
  /// the merged value is not the first version's, or is the default.
  std::vector<std::string> Details;
  std::string By;               ///< Each: the key that identifies an item.
  std::vector<MergeRule> Items; ///< Each: the facts of one item.

  /// A value every version must give: Default when absent, Disputed when
  /// the versions differ.
  static MergeRule agree(std::string Key, std::string Default,
                         std::string Disputed,
                         std::vector<std::string> Details = {}) {
    MergeRule Rule;
    Rule.Key = std::move(Key);
    Rule.How = Kind::Agree;
    Rule.Default = std::move(Default);
    Rule.Disputed = std::move(Disputed);
    Rule.Details = std::move(Details);
    return Rule;
  }
};

/// One facet's facts about one function, type-erased for the engine.
class FacetFacts {
public:
  virtual ~FacetFacts() = default;
  virtual std::unique_ptr<FacetFacts> clone() const = 0;
  /// Whether these facts say nothing (the facet's defaults).
  virtual bool empty() const = 0;
  /// Whether O holds the same facts (the fixpoint test of recursion).
  virtual bool same(const FacetFacts &O) const = 0;
  /// Adds this facet's keys to a function's JSON object (defaults too).
  virtual void write(FactJson &Object) const = 0;
  /// Reads this facet's keys; a problem is recorded in R.
  virtual void read(FactReader &R) = 0;
};

/// What the engine knows of one facet: a name, its facts and their merge
/// rules. One instance per facet, made by facetKind<T>().
class FacetKind {
public:
  virtual ~FacetKind() = default;
  /// A small number, dense from 0, for the facet's slot in a summary.
  unsigned id() const { return Id; }
  virtual llvm::StringRef name() const = 0;
  virtual std::unique_ptr<FacetFacts> make() const = 0;
  virtual const std::vector<MergeRule> &rules() const = 0;

  /// Every facet the plugin defines, ordered by name.
  static std::vector<const FacetKind *> all();
  /// The most facets one process may define (bits of a mask per facet).
  static constexpr unsigned MaxFacets = 32;

protected:
  FacetKind();

private:
  unsigned Id;
};

/// The facts of T, a facet's struct, for the engine. T provides
///   static constexpr const char *Name;           // the facet's name
///   static std::vector<MergeRule> mergeRules();  // one per fact
///   bool empty() const;  bool same(const T &) const;
///   void write(FactJson &) const;  void read(FactReader &);
template <typename T> class FacetFactsOf final : public FacetFacts {
public:
  T Value;
  std::unique_ptr<FacetFacts> clone() const override {
    return std::make_unique<FacetFactsOf>(*this);
  }
  bool empty() const override { return Value.empty(); }
  bool same(const FacetFacts &O) const override {
    return Value.same(static_cast<const FacetFactsOf &>(O).Value);
  }
  void write(FactJson &Object) const override { Value.write(Object); }
  void read(FactReader &R) override { Value.read(R); }
};

template <typename T> class FacetKindOf final : public FacetKind {
public:
  llvm::StringRef name() const override { return T::Name; }
  std::unique_ptr<FacetFacts> make() const override {
    return std::make_unique<FacetFactsOf<T>>();
  }
  const std::vector<MergeRule> &rules() const override { return Rules; }

private:
  std::vector<MergeRule> Rules = T::mergeRules();
};

/// The kind of facet T, registered on first use. Each facet's .cpp also
/// asks for it at load time (METAGUARD_REGISTER_FACET), so that a facts file
/// read before any check ran still has every facet's keys read.
template <typename T> const FacetKind &facetKind() {
  static const FacetKindOf<T> Kind;
  return Kind;
}

#define METAGUARD_REGISTER_FACET(T)                                            \
  [[maybe_unused]] static const ::clang::tidy::metaguard::FacetKind            \
      &RegisteredFacet##T = ::clang::tidy::metaguard::facetKind<T>()

/// The summary of one function: its identity and the facts of each facet
/// that has something to say.
class FunctionSummary {
public:
  std::string USR;
  std::string Name; ///< Qualified name, for messages.

  FunctionSummary() = default;
  FunctionSummary(const FunctionSummary &O);
  FunctionSummary &operator=(const FunctionSummary &O);
  FunctionSummary(FunctionSummary &&) = default;
  FunctionSummary &operator=(FunctionSummary &&) = default;

  /// The facts of facet T (its defaults when it has none).
  template <typename T> const T &get() const {
    if (const FacetFacts *F = facts(facetKind<T>()))
      return static_cast<const FacetFactsOf<T> *>(F)->Value;
    static const T Defaults;
    return Defaults;
  }
  /// The facts of facet T, to fill in.
  template <typename T> T &edit() {
    return static_cast<FacetFactsOf<T> &>(editFacts(facetKind<T>())).Value;
  }

  /// The engine's access, by kind.
  const FacetFacts *facts(const FacetKind &K) const;
  FacetFacts &editFacts(const FacetKind &K);
  void setFacts(const FacetKind &K, std::unique_ptr<FacetFacts> F);
  void clearFacts(const FacetKind &K);

  /// Whether the summary says nothing a call site could use.
  bool empty() const;

private:
  llvm::SmallVector<std::unique_ptr<FacetFacts>, 4> Slots;
};

} // namespace clang::tidy::metaguard

#endif // METAGUARD_CHECKS_UTILS_SUMMARIES_FUNCTIONSUMMARY_H
